//! Image formats: the one table between OpenCL's `cl_image_format`
//! (channel order and channel data type) and Vulkan's `VkFormat`, the
//! element sizes, and the host-side conversion of a colour into a format's
//! bytes (for clEnqueueFillImage).
//!
//! Orders that Vulkan has no format for are stored in a format of the same
//! bytes (CL_A, CL_INTENSITY and CL_LUMINANCE in single-channel formats);
//! those need a component swizzle when a kernel samples them and cannot be
//! written by kernels, which the support check reports.

use ash::vk;
use opencl_sys::*;

/// One supported pairing of an OpenCL format with a Vulkan format.
#[derive(Clone, Copy, Debug)]
pub struct FormatEntry {
    pub order: cl_channel_order,
    pub data_type: cl_channel_type,
    pub vk: vk::Format,
    /// The channels are stored in Vulkan's red channel (or red and green)
    /// and reach OpenCL's channels through a swizzle.
    pub swizzled: bool,
}

macro_rules! entries {
    ($order:ident, $swz:expr, [$($ty:ident => $vk:ident),* $(,)?]) => {
        [$(FormatEntry { order: $order, data_type: $ty, vk: vk::Format::$vk, swizzled: $swz }),*]
    };
}

/// Every image format vkcl can offer; a device offers those whose Vulkan
/// format has the features the memory flags need.
pub fn table() -> Vec<FormatEntry> {
    let mut t = Vec::new();
    t.extend(entries!(CL_R, false, [
        CL_UNORM_INT8 => R8_UNORM, CL_UNORM_INT16 => R16_UNORM,
        CL_SNORM_INT8 => R8_SNORM, CL_SNORM_INT16 => R16_SNORM,
        CL_SIGNED_INT8 => R8_SINT, CL_SIGNED_INT16 => R16_SINT, CL_SIGNED_INT32 => R32_SINT,
        CL_UNSIGNED_INT8 => R8_UINT, CL_UNSIGNED_INT16 => R16_UINT, CL_UNSIGNED_INT32 => R32_UINT,
        CL_HALF_FLOAT => R16_SFLOAT, CL_FLOAT => R32_SFLOAT,
    ]));
    // Red and green; red and alpha are the same two channels, which the
    // view moves to red and alpha.
    for (order, swizzled) in [(CL_RG, false), (CL_RA, true)] {
        t.extend(entries!(order, swizzled, [
            CL_UNORM_INT8 => R8G8_UNORM, CL_UNORM_INT16 => R16G16_UNORM,
            CL_SNORM_INT8 => R8G8_SNORM, CL_SNORM_INT16 => R16G16_SNORM,
            CL_SIGNED_INT8 => R8G8_SINT, CL_SIGNED_INT16 => R16G16_SINT, CL_SIGNED_INT32 => R32G32_SINT,
            CL_UNSIGNED_INT8 => R8G8_UINT, CL_UNSIGNED_INT16 => R16G16_UINT, CL_UNSIGNED_INT32 => R32G32_UINT,
            CL_HALF_FLOAT => R16G16_SFLOAT, CL_FLOAT => R32G32_SFLOAT,
        ]));
    }
    t.extend(entries!(CL_RGBA, false, [
        CL_UNORM_INT8 => R8G8B8A8_UNORM, CL_UNORM_INT16 => R16G16B16A16_UNORM,
        CL_SNORM_INT8 => R8G8B8A8_SNORM, CL_SNORM_INT16 => R16G16B16A16_SNORM,
        CL_SIGNED_INT8 => R8G8B8A8_SINT, CL_SIGNED_INT16 => R16G16B16A16_SINT,
        CL_SIGNED_INT32 => R32G32B32A32_SINT,
        CL_UNSIGNED_INT8 => R8G8B8A8_UINT, CL_UNSIGNED_INT16 => R16G16B16A16_UINT,
        CL_UNSIGNED_INT32 => R32G32B32A32_UINT,
        CL_HALF_FLOAT => R16G16B16A16_SFLOAT, CL_FLOAT => R32G32B32A32_SFLOAT,
    ]));
    t.extend(entries!(CL_BGRA, false, [
        CL_UNORM_INT8 => B8G8R8A8_UNORM, CL_SNORM_INT8 => B8G8R8A8_SNORM,
        CL_SIGNED_INT8 => B8G8R8A8_SINT, CL_UNSIGNED_INT8 => B8G8R8A8_UINT,
    ]));
    // Packed formats. 101010: OpenCL's and Vulkan's put red in the high
    // bits; the bits OpenCL leaves unused are Vulkan's alpha, which kernels
    // read as 1 for CL_RGB. 565 and 555 are stored as their raw 16 bits,
    // which kernels unpack and pack themselves: drivers (lavapipe, NVIDIA)
    // read Vulkan's R5G6B5 and A1R5G5B5 by widening the channels to 8 bits
    // first, short of OpenCL's precision.
    t.extend(entries!(CL_RGB, false, [
        CL_UNORM_SHORT_565 => R16_UNORM,
        CL_UNORM_SHORT_555 => R16_UNORM,
        CL_UNORM_INT_101010 => A2R10G10B10_UNORM_PACK32,
    ]));
    // Alpha first: the bytes of an RGBA format, reordered by the view.
    for order in [CL_ARGB, CL_ABGR] {
        t.extend(entries!(order, true, [
            CL_UNORM_INT8 => R8G8B8A8_UNORM, CL_SNORM_INT8 => R8G8B8A8_SNORM,
            CL_SIGNED_INT8 => R8G8B8A8_SINT, CL_UNSIGNED_INT8 => R8G8B8A8_UINT,
        ]));
    }
    t.extend(entries!(CL_sRGBA, false, [CL_UNORM_INT8 => R8G8B8A8_SRGB]));
    t.extend(entries!(CL_sBGRA, false, [CL_UNORM_INT8 => B8G8R8A8_SRGB]));
    // Depth images (cl_khr_depth_images): a one-channel colour format, of
    // which kernels see the first channel.
    t.extend(entries!(CL_DEPTH, false, [
        CL_UNORM_INT16 => R16_UNORM, CL_FLOAT => R32_SFLOAT,
    ]));
    for order in [CL_A, CL_INTENSITY, CL_LUMINANCE] {
        t.extend(entries!(order, true, [
            CL_UNORM_INT8 => R8_UNORM, CL_UNORM_INT16 => R16_UNORM,
            CL_SNORM_INT8 => R8_SNORM, CL_SNORM_INT16 => R16_SNORM,
            CL_HALF_FLOAT => R16_SFLOAT, CL_FLOAT => R32_SFLOAT,
        ]));
    }
    t
}

/// A format of the same texel size whose components are `vk`'s with red
/// and blue exchanged, for writing images whose own format kernels cannot
/// write (B8G8R8A8 is seldom a storage format; R8G8B8A8 always is).
pub fn storage_stand_in(vk: vk::Format) -> Option<vk::Format> {
    Some(match vk {
        vk::Format::B8G8R8A8_UNORM => vk::Format::R8G8B8A8_UNORM,
        vk::Format::B8G8R8A8_SNORM => vk::Format::R8G8B8A8_SNORM,
        vk::Format::B8G8R8A8_SINT => vk::Format::R8G8B8A8_SINT,
        vk::Format::B8G8R8A8_UINT => vk::Format::R8G8B8A8_UINT,
        _ => return None,
    })
}

/// The format whose views show `vk`'s texels with the sRGB transfer
/// function added or taken away: 2D images made from one another with
/// CL_sRGBA and CL_RGBA, or CL_sBGRA and CL_BGRA, view one Vulkan image
/// through the two.
pub fn srgb_sibling(vk: vk::Format) -> Option<vk::Format> {
    use vk::Format as F;
    Some(match vk {
        F::R8G8B8A8_UNORM => F::R8G8B8A8_SRGB,
        F::R8G8B8A8_SRGB => F::R8G8B8A8_UNORM,
        F::B8G8R8A8_UNORM => F::B8G8R8A8_SRGB,
        F::B8G8R8A8_SRGB => F::B8G8R8A8_UNORM,
        _ => return None,
    })
}

/// Whether a 2D image of format `new` may be made from a 2D image of
/// format `old`: the same data type, and the same channel order or one
/// that differs only in its transfer function or in being a depth order.
pub fn may_view_as(old: &cl_image_format, new: &cl_image_format) -> bool {
    let pair = |a, b| {
        matches!(
            (a, b),
            (CL_sRGBA, CL_RGBA)
                | (CL_sBGRA, CL_BGRA)
                | (CL_sRGB, CL_RGB)
                | (CL_sRGBx, CL_RGBx)
                | (CL_DEPTH, CL_R)
        )
    };
    let (a, b) = (old.image_channel_order, new.image_channel_order);
    old.image_channel_data_type == new.image_channel_data_type
        && (a == b || pair(a, b) || pair(b, a))
}

/// How kernels see the channels of an order stored in Vulkan's red
/// channel, or in another order than Vulkan's (identity for every other
/// order).
pub fn swizzle(order: cl_channel_order) -> vk::ComponentMapping {
    use vk::ComponentSwizzle as S;
    let (r, g, b, a) = match order {
        // Bytes A, R, G, B and A, B, G, R in Vulkan's R, G, B, A.
        CL_ARGB => (S::G, S::B, S::A, S::R),
        CL_ABGR => (S::A, S::B, S::G, S::R),
        CL_A => (S::ZERO, S::ZERO, S::ZERO, S::R),
        CL_RA => (S::R, S::ZERO, S::ZERO, S::G),
        CL_INTENSITY => (S::R, S::R, S::R, S::R),
        CL_LUMINANCE => (S::R, S::R, S::R, S::ONE),
        // The packed formats' unused bits are Vulkan's alpha.
        CL_RGB => (S::IDENTITY, S::IDENTITY, S::IDENTITY, S::ONE),
        _ => (S::IDENTITY, S::IDENTITY, S::IDENTITY, S::IDENTITY),
    };
    vk::ComponentMapping { r, g, b, a }
}

/// Whether images of `image_type` may have channel order `order`: depth
/// images are 2D images and 2D image arrays only.
pub fn order_allowed(order: cl_channel_order, image_type: cl_mem_object_type) -> bool {
    order != CL_DEPTH
        || matches!(
            image_type,
            CL_MEM_OBJECT_IMAGE2D | CL_MEM_OBJECT_IMAGE2D_ARRAY
        )
}

/// The table entry for a format, if vkcl has one.
pub fn lookup(format: &cl_image_format) -> Option<FormatEntry> {
    table().into_iter().find(|e| {
        e.order == format.image_channel_order && e.data_type == format.image_channel_data_type
    })
}

/// Channels of an order, or `None` for an order OpenCL does not define.
pub fn channel_count(order: cl_channel_order) -> Option<usize> {
    Some(match order {
        CL_R | CL_A | CL_Rx | CL_INTENSITY | CL_LUMINANCE | CL_DEPTH => 1,
        CL_RG | CL_RA | CL_RGx => 2,
        CL_RGB | CL_RGBx | CL_sRGB | CL_sRGBx => 3,
        CL_RGBA | CL_BGRA | CL_ARGB | CL_ABGR | CL_sRGBA | CL_sBGRA => 4,
        _ => return None,
    })
}

/// Bytes per channel, or per element for packed types; `None` for a
/// type OpenCL does not define.
fn type_size(data_type: cl_channel_type) -> Option<(usize, bool)> {
    Some(match data_type {
        CL_SNORM_INT8 | CL_UNORM_INT8 | CL_SIGNED_INT8 | CL_UNSIGNED_INT8 => (1, false),
        CL_SNORM_INT16 | CL_UNORM_INT16 | CL_SIGNED_INT16 | CL_UNSIGNED_INT16 | CL_HALF_FLOAT => {
            (2, false)
        }
        CL_SIGNED_INT32 | CL_UNSIGNED_INT32 | CL_FLOAT => (4, false),
        CL_UNORM_SHORT_565 | CL_UNORM_SHORT_555 => (2, true),
        CL_UNORM_INT_101010 | CL_UNORM_INT_101010_2 => (4, true),
        _ => return None,
    })
}

/// The size of one element of a well-formed format, or `None` where the
/// format descriptor is not one OpenCL defines (an unknown order or type,
/// or a pairing the specification rules out).
pub fn element_size(format: &cl_image_format) -> Option<usize> {
    let order = format.image_channel_order;
    let ty = format.image_channel_data_type;
    let channels = channel_count(order)?;
    let (size, packed) = type_size(ty)?;
    let normalized_or_float = matches!(
        ty,
        CL_UNORM_INT8 | CL_UNORM_INT16 | CL_SNORM_INT8 | CL_SNORM_INT16 | CL_HALF_FLOAT | CL_FLOAT
    );
    let ok = match order {
        CL_INTENSITY | CL_LUMINANCE => normalized_or_float,
        CL_RGB | CL_RGBx => packed && ty != CL_UNORM_INT_101010_2,
        CL_RGBA => !packed || ty == CL_UNORM_INT_101010_2,
        CL_BGRA | CL_ARGB | CL_ABGR => matches!(
            ty,
            CL_UNORM_INT8 | CL_SNORM_INT8 | CL_SIGNED_INT8 | CL_UNSIGNED_INT8
        ),
        CL_sRGB | CL_sRGBx | CL_sRGBA | CL_sBGRA => ty == CL_UNORM_INT8,
        CL_DEPTH => matches!(ty, CL_UNORM_INT16 | CL_FLOAT),
        _ => !packed,
    };
    if !ok {
        return None;
    }
    Some(if packed { size } else { size * channels })
}

/// A fill colour as clEnqueueFillImage passes it: four floats, four signed
/// or four unsigned integers, depending on the channel data type.
pub fn fill_bytes(entry: &FormatEntry, color: &[u8; 16]) -> Vec<u8> {
    let word = |i: usize| u32::from_ne_bytes(color[i * 4..i * 4 + 4].try_into().expect("4 bytes"));
    let f = |i: usize| f32::from_bits(word(i));
    let ty = entry.data_type;
    let srgb = matches!(entry.order, CL_sRGBA | CL_sBGRA);
    // The channels in memory order, as indices into (r, g, b, a).
    let channels: &[usize] = match entry.order {
        CL_R | CL_INTENSITY | CL_LUMINANCE | CL_DEPTH => &[0],
        CL_A => &[3],
        CL_RG => &[0, 1],
        CL_RA => &[0, 3],
        CL_BGRA | CL_sBGRA => &[2, 1, 0, 3],
        CL_ARGB => &[3, 0, 1, 2],
        CL_ABGR => &[3, 2, 1, 0],
        _ => &[0, 1, 2, 3],
    };
    // Packed formats: red in the high bits.
    let packed = |bits: [u32; 3]| {
        bits.into_iter().enumerate().fold(0u32, |v, (c, b)| {
            (v << b) | norm(f(c), 0.0, ((1u32 << b) - 1) as f32) as u32
        })
    };
    match ty {
        CL_UNORM_SHORT_565 => return (packed([5, 6, 5]) as u16).to_ne_bytes().to_vec(),
        CL_UNORM_SHORT_555 => return (packed([5, 5, 5]) as u16).to_ne_bytes().to_vec(),
        CL_UNORM_INT_101010 => return packed([10, 10, 10]).to_ne_bytes().to_vec(),
        _ => {}
    }
    let mut out = Vec::with_capacity(16);
    for &c in channels {
        match ty {
            CL_UNORM_INT8 => {
                let v = if srgb && c < 3 { to_srgb(f(c)) } else { f(c) };
                out.push(norm(v, 0.0, 255.0) as u8);
            }
            CL_UNORM_INT16 => out.extend((norm(f(c), 0.0, 65535.0) as u16).to_ne_bytes()),
            CL_SNORM_INT8 => out.push(norm(f(c), -1.0, 127.0) as i8 as u8),
            CL_SNORM_INT16 => out.extend((norm(f(c), -1.0, 32767.0) as i16).to_ne_bytes()),
            CL_HALF_FLOAT => out.extend(f32_to_f16(f(c)).to_ne_bytes()),
            CL_FLOAT => out.extend(f(c).to_ne_bytes()),
            CL_SIGNED_INT8 => out.push((word(c) as i32).clamp(-128, 127) as i8 as u8),
            CL_SIGNED_INT16 => {
                out.extend(((word(c) as i32).clamp(-32768, 32767) as i16).to_ne_bytes())
            }
            CL_SIGNED_INT32 | CL_UNSIGNED_INT32 => out.extend(word(c).to_ne_bytes()),
            CL_UNSIGNED_INT8 => out.push(word(c).min(255) as u8),
            CL_UNSIGNED_INT16 => out.extend((word(c).min(65535) as u16).to_ne_bytes()),
            _ => {}
        }
    }
    out
}

/// A normalized value: clamped to [lo, 1], scaled and rounded to nearest.
fn norm(v: f32, lo: f32, scale: f32) -> f32 {
    let v = if v.is_nan() { 0.0 } else { v.clamp(lo, 1.0) };
    (v * scale).round_ties_even()
}

/// The sRGB transfer function, linear to encoded.
fn to_srgb(v: f32) -> f32 {
    let v = if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) };
    if v <= 0.003_130_8 {
        v * 12.92
    } else {
        1.055 * v.powf(1.0 / 2.4) - 0.055
    }
}

/// An f32 as IEEE half, rounded to nearest even.
pub fn f32_to_f16(v: f32) -> u16 {
    let bits = v.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        // Infinity stays infinity; NaN stays a (quiet) NaN.
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        // A subnormal half: shift the full mantissa into place, rounding.
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = m >> shift;
        let rest = m & ((1 << shift) - 1);
        let mid = 1 << (shift - 1);
        let round = rest > mid || (rest == mid && half & 1 == 1);
        return sign | (half + round as u32) as u16;
    }
    let half = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    let round = rest > 0x1000 || (rest == 0x1000 && half & 1 == 1);
    // A carry out of the mantissa moves into the exponent, which is right
    // (and reaches infinity exactly when it should).
    sign | (half + round as u32) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(order: cl_channel_order, ty: cl_channel_type) -> cl_image_format {
        cl_image_format {
            image_channel_order: order,
            image_channel_data_type: ty,
        }
    }

    #[test]
    fn element_sizes_and_bad_descriptors() {
        assert_eq!(element_size(&fmt(CL_RGBA, CL_UNORM_INT8)), Some(4));
        assert_eq!(element_size(&fmt(CL_RGBA, CL_FLOAT)), Some(16));
        assert_eq!(element_size(&fmt(CL_RG, CL_HALF_FLOAT)), Some(4));
        assert_eq!(element_size(&fmt(CL_RGB, CL_UNORM_SHORT_565)), Some(2));
        assert_eq!(element_size(&fmt(CL_RGBA, CL_UNORM_INT_101010_2)), Some(4));
        assert_eq!(element_size(&fmt(CL_RGB, CL_UNORM_INT8)), None);
        assert_eq!(element_size(&fmt(CL_INTENSITY, CL_UNSIGNED_INT8)), None);
        assert_eq!(element_size(&fmt(CL_BGRA, CL_FLOAT)), None);
        assert_eq!(element_size(&fmt(CL_R, CL_UNORM_SHORT_565)), None);
        assert_eq!(element_size(&fmt(0x1234, CL_FLOAT)), None);
        assert_eq!(element_size(&fmt(CL_R, 0x1234)), None);
        // Every table entry is a well-formed descriptor of its Vulkan size.
        for e in table() {
            assert!(element_size(&fmt(e.order, e.data_type)).is_some(), "{e:?}");
        }
    }

    #[test]
    fn fill_colours() {
        let floats = |v: [f32; 4]| -> [u8; 16] {
            let mut b = [0u8; 16];
            for (i, x) in v.iter().enumerate() {
                b[i * 4..i * 4 + 4].copy_from_slice(&x.to_ne_bytes());
            }
            b
        };
        let bgra = lookup(&fmt(CL_BGRA, CL_UNORM_INT8)).unwrap();
        assert_eq!(
            fill_bytes(&bgra, &floats([1.0, 0.5, 0.0, 2.0])),
            [0, 128, 255, 255]
        );
        let a = lookup(&fmt(CL_A, CL_UNORM_INT16)).unwrap();
        assert_eq!(fill_bytes(&a, &floats([0.0, 0.0, 0.0, 1.0])), [255, 255]);
        let s = lookup(&fmt(CL_RG, CL_SNORM_INT8)).unwrap();
        assert_eq!(fill_bytes(&s, &floats([-2.0, 0.5, 0.0, 0.0])), [0x81, 64]);
        let h = lookup(&fmt(CL_R, CL_HALF_FLOAT)).unwrap();
        assert_eq!(
            fill_bytes(&h, &floats([1.5, 0.0, 0.0, 0.0])),
            0x3e00u16.to_ne_bytes()
        );
        let p = lookup(&fmt(CL_RGB, CL_UNORM_SHORT_565)).unwrap();
        assert_eq!(
            fill_bytes(&p, &floats([1.0, 0.5, 0.0, 0.0])),
            (0xf800u16 | (32 << 5)).to_ne_bytes()
        );
        let p = lookup(&fmt(CL_RGB, CL_UNORM_SHORT_555)).unwrap();
        assert_eq!(
            fill_bytes(&p, &floats([0.0, 1.0, 1.0 / 31.0, 0.0])),
            ((31u16 << 5) | 1).to_ne_bytes()
        );
        let p = lookup(&fmt(CL_RGB, CL_UNORM_INT_101010)).unwrap();
        assert_eq!(
            fill_bytes(&p, &floats([0.0, 1.0, 1.0 / 1023.0, 0.0])),
            ((1023u32 << 10) | 1).to_ne_bytes()
        );
        let argb = lookup(&fmt(CL_ARGB, CL_UNORM_INT8)).unwrap();
        assert_eq!(
            fill_bytes(&argb, &floats([1.0, 0.0, 0.5, 0.2])),
            [51, 255, 0, 128]
        );
        let mut ints = [0u8; 16];
        ints[..4].copy_from_slice(&(-300i32).to_ne_bytes());
        let i8f = lookup(&fmt(CL_R, CL_SIGNED_INT8)).unwrap();
        assert_eq!(fill_bytes(&i8f, &ints), [0x80]);
    }

    #[test]
    fn halves() {
        assert_eq!(f32_to_f16(0.0), 0);
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_f16(-2.0), 0xc000);
        assert_eq!(f32_to_f16(65504.0), 0x7bff);
        assert_eq!(f32_to_f16(70000.0), 0x7c00);
        assert_eq!(f32_to_f16(f32::INFINITY), 0x7c00);
        assert_eq!(f32_to_f16(5.960_464_5e-8), 1);
        assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), 0x3c00);
        assert_eq!(f32_to_f16(1.0 + 3.0 / 2048.0), 0x3c02);
    }
}
