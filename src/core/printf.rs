//! The host side of printf: the buffer a dispatch writes its records to,
//! and the formatting of those records (with the C library's own
//! conversions, so `%e`, `%g`, `%a` and the flags print exactly as C's
//! printf does) onto standard output after the command completes.

use std::io::Write;

use crate::compiler::spirv::p1_kernel::printf::{PrintfArg, PrintfCall};

/// Bytes of a dispatch's printf buffer: `VKCL_PRINTF_BUFFER_SIZE`, else
/// 1 MiB (what CL_DEVICE_PRINTF_BUFFER_SIZE reports).
pub fn buffer_size() -> usize {
    std::env::var("VKCL_PRINTF_BUFFER_SIZE")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n >= 64)
        .unwrap_or(1 << 20)
}

/// The buffer's first two words: bytes used (zero) and capacity.
pub fn header(size: usize) -> [u8; 8] {
    let mut h = [0u8; 8];
    h[4..].copy_from_slice(&((size - 8) as u32).to_le_bytes());
    h
}

/// Formats the records of a completed dispatch and writes them to
/// standard output; reports records that did not fit.
pub fn print_records(buffer: &[u8], calls: &[PrintfCall]) {
    let word = |at: usize| -> u32 {
        buffer
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("four bytes")))
            .unwrap_or(0)
    };
    let used = word(0) as usize;
    let capacity = word(4) as usize;
    let records = &buffer[8..];
    let mut out = Vec::new();
    let mut at = 0usize;
    let end = used.min(capacity).min(records.len());
    while at + 4 <= end {
        let index = u32::from_le_bytes(records[at..at + 4].try_into().expect("word")) as usize;
        let Some(call) = calls.get(index) else { break };
        let words: usize = 1 + call.args.iter().map(|a| a.words() as usize).sum::<usize>();
        if at + words * 4 > end {
            break;
        }
        let data: Vec<u32> = (0..words)
            .map(|k| {
                u32::from_le_bytes(
                    records[at + 4 * k..at + 4 * k + 4]
                        .try_into()
                        .expect("word"),
                )
            })
            .collect();
        out.extend(format_record(call, &data[1..]));
        at += words * 4;
    }
    if used > capacity {
        log::warn!(target: "vkcl::printf", "printf output beyond the {capacity}-byte buffer was lost (VKCL_PRINTF_BUFFER_SIZE sets its size)");
    }
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(&out);
    let _ = stdout.flush();
}

/// One conversion of a format: flags, width, precision, length, vector
/// size and conversion character.
struct Spec {
    flags: String,
    width: String,
    precision: String,
    length: String,
    conversion: u8,
}

fn parse_spec(f: &[u8], mut i: usize) -> Option<(Spec, usize)> {
    let take = |i: &mut usize, ok: &dyn Fn(u8) -> bool| {
        let s = *i;
        while *i < f.len() && ok(f[*i]) {
            *i += 1;
        }
        String::from_utf8_lossy(&f[s..*i]).into_owned()
    };
    let flags = take(&mut i, &|c| b"-+ #0".contains(&c));
    let width = take(&mut i, &|c| c.is_ascii_digit());
    let precision = if f.get(i) == Some(&b'.') {
        i += 1;
        format!(".{}", take(&mut i, &|c| c.is_ascii_digit()))
    } else {
        String::new()
    };
    // The vector size (`%v4hd`): the argument already says how many
    // lanes it has.
    if f.get(i) == Some(&b'v') {
        i += 1;
        take(&mut i, &|c| c.is_ascii_digit())
            .parse::<usize>()
            .ok()?;
    }
    let length = take(&mut i, &|c| b"hlL".contains(&c));
    let conversion = *f.get(i)?;
    Some((
        Spec {
            flags,
            width,
            precision,
            length,
            conversion,
        },
        i + 1,
    ))
}

/// The C library's formatting of one value.
fn c_format(fmt: &str, value: CValue) -> Vec<u8> {
    let Ok(cfmt) = std::ffi::CString::new(fmt) else {
        return Vec::new();
    };
    let mut buf = vec![0u8; 512];
    // SAFETY: the format holds exactly one conversion whose argument type
    // matches `value`; snprintf writes at most buf.len() bytes.
    let n = unsafe {
        match value {
            CValue::Int(v) => libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), cfmt.as_ptr(), v),
            CValue::Uint(v) => libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), cfmt.as_ptr(), v),
            CValue::Float(v) => {
                libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), cfmt.as_ptr(), v)
            }
            CValue::Str(ref s) => {
                let s = std::ffi::CString::new(s.as_str()).unwrap_or_default();
                libc::snprintf(
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    cfmt.as_ptr(),
                    s.as_ptr(),
                )
            }
        }
    };
    buf.truncate(n.clamp(0, 511) as usize);
    buf
}

enum CValue {
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
}

/// The text of one record.
fn format_record(call: &PrintfCall, mut data: &[u32]) -> Vec<u8> {
    let f = call.format.as_bytes();
    let mut out = Vec::new();
    let mut args = call.args.iter();
    let mut i = 0;
    while i < f.len() {
        if f[i] != b'%' {
            out.push(f[i]);
            i += 1;
            continue;
        }
        if f.get(i + 1) == Some(&b'%') {
            out.push(b'%');
            i += 2;
            continue;
        }
        let Some((spec, next)) = parse_spec(f, i + 1) else {
            out.extend_from_slice(&f[i..]);
            break;
        };
        i = next;
        let Some(arg) = args.next() else { break };
        let base = format!("%{}{}{}", spec.flags, spec.width, spec.precision);
        match *arg {
            PrintfArg::String => {
                let k = data.first().copied().unwrap_or(0) as usize;
                data = data.get(1..).unwrap_or(&[]);
                let s = call.strings.get(k).cloned().unwrap_or_default();
                out.extend(c_format(&format!("{base}s"), CValue::Str(s)));
            }
            PrintfArg::Value {
                float,
                bytes,
                lanes,
            } => {
                let per = if bytes == 8 { 2 } else { 1 };
                let mut parts = Vec::new();
                for _ in 0..lanes {
                    let raw = match per {
                        2 => u64::from(data[0]) | (u64::from(data[1]) << 32),
                        _ => u64::from(data[0]),
                    };
                    data = data.get(per..).unwrap_or(&[]);
                    parts.push(format_value(&spec, &base, raw, float, bytes));
                }
                out.extend(parts.join(&b","[..]));
            }
        }
    }
    out
}

fn format_value(spec: &Spec, base: &str, raw: u64, float: bool, bytes: u32) -> Vec<u8> {
    let conv = spec.conversion as char;
    // A length modifier narrower than the argument converts it first, as
    // C does (`%hx` of the int -32767 prints 8001).
    let narrowed = match spec.length.as_str() {
        "hh" => 1,
        "h" => 2,
        "hl" => 4,
        _ => bytes,
    };
    let bytes = if float { bytes } else { bytes.min(narrowed) };
    match conv {
        'f' | 'F' | 'e' | 'E' | 'g' | 'G' | 'a' | 'A' => {
            let v = if float {
                match bytes {
                    8 => f64::from_bits(raw),
                    2 => half_to_f64(raw as u16),
                    _ => f32::from_bits(raw as u32) as f64,
                }
            } else {
                raw as f64
            };
            c_format(&format!("{base}{conv}"), CValue::Float(v))
        }
        'd' | 'i' => {
            let v = match bytes {
                1 => raw as u8 as i8 as i64,
                2 => raw as u16 as i16 as i64,
                4 => raw as u32 as i32 as i64,
                _ => raw as i64,
            };
            c_format(&format!("{base}lld"), CValue::Int(v))
        }
        'u' | 'o' | 'x' | 'X' => {
            let v = match bytes {
                1 => raw & 0xFF,
                2 => raw & 0xFFFF,
                4 => raw & 0xFFFF_FFFF,
                _ => raw,
            };
            c_format(&format!("{base}ll{conv}"), CValue::Uint(v))
        }
        'c' => c_format(&format!("{base}c"), CValue::Int(raw as u8 as i64)),
        'p' => c_format(&format!("{base}llx"), CValue::Uint(raw))
            .into_iter()
            .fold(b"0x".to_vec(), |mut a, c| {
                a.push(c);
                a
            }),
        _ => Vec::new(),
    }
}

fn half_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = (h >> 10) & 0x1F;
    let mant = f64::from(h & 0x3FF);
    sign * match exp {
        0 => mant * 2f64.powi(-24),
        31 if mant == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1024.0 + mant) * 2f64.powi(i32::from(e) - 25),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_format_like_c() {
        let call = PrintfCall {
            format: "%d %5.2f %s %v2hd %x %%\n".into(),
            args: vec![
                PrintfArg::Value {
                    float: false,
                    bytes: 4,
                    lanes: 1,
                },
                PrintfArg::Value {
                    float: true,
                    bytes: 4,
                    lanes: 1,
                },
                PrintfArg::String,
                PrintfArg::Value {
                    float: false,
                    bytes: 2,
                    lanes: 2,
                },
                PrintfArg::Value {
                    float: false,
                    bytes: 4,
                    lanes: 1,
                },
            ],
            strings: vec!["ok".into()],
        };
        let data = [(-7i32) as u32, 1.5f32.to_bits(), 0, 3, 0xFFFF, 255];
        assert_eq!(
            String::from_utf8(format_record(&call, &data)).unwrap(),
            "-7  1.50 ok 3,-1 ff %\n"
        );
    }

    #[test]
    fn length_modifiers_narrow_their_argument() {
        let int = PrintfArg::Value {
            float: false,
            bytes: 4,
            lanes: 1,
        };
        let call = PrintfCall {
            format: "%hx %hhx %ho %hd %hhd".into(),
            args: vec![int; 5],
            strings: vec![],
        };
        let data = [-32767i32, -128, -32767, 40000, 200].map(|v| v as u32);
        assert_eq!(
            String::from_utf8(format_record(&call, &data)).unwrap(),
            "8001 80 100001 -25536 -56"
        );
    }
}
