//! Pass 17 (phase 5): Images and samplers: OpenCL's image SPIR-V becomes
//! Vulkan's.
//!
//! Takes a kernel whose image and sampler parameters the interface pass
//! left as `OpUndef`s of their OpenCL types, after the addressing and
//! structure passes. Guarantees a module whose images are descriptors of
//! set 0 (the parameters in order at bindings 0, 1, …, then one sampler per
//! literal sampler, then each sampler's twin) and whose image instructions
//! are valid for Vulkan:
//!
//! * read-only images are sampled images (`Sampled = 1`): reads with a
//!   sampler stay `OpImageSampleExplicitLod`, reads without one become
//!   `OpImageFetch`; write-only and read-write images are storage images
//!   (`Sampled = 2`) read and written without a format; 1D image
//!   buffers are texel buffers the same way (uniform texel buffers read
//!   with `OpImageFetch`, storage texel buffers), without levels of detail;
//! * the sampled type (float, signed or unsigned integer) is the one of the
//!   image bound at enqueue, which the caller passes: OpenCL SPIR-V does not
//!   say whether `read_imagei` or `read_imageui` was called;
//! * 1D and 2D images are sampled with the sampler's twin, a Vulkan sampler
//!   that takes unnormalized coordinates exactly where the OpenCL sampler
//!   does (Vulkan allows that only for those images); arrays and 3D images
//!   are sampled at coordinates normalized by the image size in the kernel
//!   (texel centres for nearest sampling, so that whole numbers do not round
//!   down), from the sampler's modes, which sampler arguments pass in a
//!   push-constant word;
//! * REPEAT wraps coordinates as OpenCL computes it; orders without alpha
//!   read alpha 1, CLK_ADDRESS_CLAMP's border included;
//! * coordinates lose the components the image does not have (the fourth
//!   of 3D and 2D array coordinates);
//! * channel order and data type queries read push-constant words, since
//!   Vulkan cannot query an image's format.

use opencl_sys::{
    CL_ADDRESS_CLAMP, CL_ADDRESS_CLAMP_TO_EDGE, CL_ADDRESS_MIRRORED_REPEAT, CL_ADDRESS_NONE,
    CL_ADDRESS_REPEAT, CL_FILTER_LINEAR, CL_FILTER_NEAREST, cl_addressing_mode, cl_filter_mode,
};
use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{
    AccessQualifier, Capability, Decoration, Dim, GlslStd450Op as G, ImageFormat, ImageOperands,
    Op, SamplerAddressingMode, SamplerFilterMode, StorageClass, Word,
};

use crate::compiler::spirv::common::ctx::{Ctx, id_at, ids_used};
use crate::compiler::spirv::common::emit::Emit;
use crate::compiler::spirv::common::{HashMap, HashSet};
use crate::compiler::spirv::p3_interface::interface::Block;

/// Set in an image's channel order word when the order has no alpha
/// channel (its low bits are the order less CLK_R).
pub const NO_ALPHA: u32 = 0x1_0000;

/// Set in an image's channel order word when kernels reach it through a
/// storage view with red and blue exchanged: texels written and read
/// there exchange them back.
pub const SWAP_RED_BLUE: u32 = 0x2_0000;

/// The numeric type an image's texels read as, from its format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ImageClass {
    /// Normalized, half and float formats.
    #[default]
    Float,
    /// A float format whose linear filtering the device does too coarsely
    /// for OpenCL: kernels filter it themselves.
    FloatFilteredInKernel,
    Int,
    Uint,
    /// `CL_UNORM_SHORT_565`: stored as one 16-bit normalized channel
    /// whose raw bits kernels unpack and pack themselves (drivers widen
    /// 5- and 6-bit channels to 8 bits first, too coarse for OpenCL), and
    /// filter linearly themselves.
    Unorm565,
    /// `CL_UNORM_SHORT_555`, the same way.
    Unorm555,
}

impl ImageClass {
    /// The widths of red, green and blue (red in the high bits) of a
    /// packed class.
    fn packed_bits(self) -> Option<[u32; 3]> {
        match self {
            ImageClass::Unorm565 => Some([5, 6, 5]),
            ImageClass::Unorm555 => Some([5, 5, 5]),
            _ => None,
        }
    }
}

/// What each descriptor binding of set 0 holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Binding {
    SampledImage,
    StorageImage,
    Sampler,
    /// A read-only 1D image buffer.
    UniformTexels,
    /// A written 1D image buffer.
    StorageTexels,
}

/// A sampler declared in the kernel source, with the binding it is at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LiteralSampler {
    pub binding: u32,
    pub normalized: bool,
    pub addressing: cl_addressing_mode,
    pub filter: cl_filter_mode,
}

/// The descriptors a kernel uses.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ImageInterface {
    pub bindings: Vec<Binding>,
    pub literal_samplers: Vec<LiteralSampler>,
    /// Capabilities that need device features.
    #[serde(with = "capability_numbers")]
    pub caps: Vec<Capability>,
    /// (binding, binding of the sampler it stands for): the samplers that
    /// 1D and 2D images are sampled with, which take unnormalized
    /// coordinates where the OpenCL sampler does.
    pub direct_samplers: Vec<(u32, u32)>,
}

/// Capabilities as their SPIR-V numbers, for the disk cache's records.
mod capability_numbers {
    use rspirv::spirv::Capability;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(caps: &[Capability], s: S) -> Result<S::Ok, S::Error> {
        caps.iter()
            .map(|&c| c as u32)
            .collect::<Vec<u32>>()
            .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Capability>, D::Error> {
        Vec::<u32>::deserialize(d)?
            .into_iter()
            .map(|n| {
                Capability::from_u32(n)
                    .ok_or_else(|| serde::de::Error::custom(format!("unknown capability {n}")))
            })
            .collect()
    }
}

#[derive(Clone, Copy)]
struct Img {
    ty: Word,
    scalar: Word,
    sampled: bool,
    /// Coordinate components: the dimensions, plus one for arrays.
    coords: u32,
    /// A 1D or 2D image, not an array: sampled with the sampler's twin,
    /// at unnormalized coordinates where the OpenCL sampler takes them.
    direct: bool,
    /// A 1D image buffer: a texel buffer, which has no level of detail.
    texels: bool,
    /// Linear filtering is done in the kernel (see [`filter_in_kernel`]).
    by_hand: bool,
    /// The channel widths of a packed 16-bit format, which the kernel
    /// unpacks from the raw bits (see [`unpack_texel`]).
    packed: Option<[u32; 3]>,
    info_spec: u32,
}

/// What the kernel knows of a sampler: its modes, or the SpecId of the
/// word holding them as [`SAMPLER_NORMALIZED`] and friends.
#[derive(Clone, Copy)]
enum SamplerInfo {
    Const {
        normalized: bool,
        linear: bool,
        repeat: bool,
        mirror: bool,
        border: bool,
    },
    Spec(u32),
}

/// Bits of a sampler argument's info word.
pub const SAMPLER_NORMALIZED: u32 = 1;
pub const SAMPLER_LINEAR: u32 = 2;
pub const SAMPLER_REPEAT: u32 = 4;
/// CLK_ADDRESS_CLAMP: texels outside the image read the border colour.
pub const SAMPLER_BORDER: u32 = 8;
pub const SAMPLER_MIRROR: u32 = 16;

/// A condition known when compiling, or computed by the kernel.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cond {
    Static(bool),
    Dynamic(Word),
}

fn lit(i: &Instruction, n: usize) -> Option<u32> {
    match i.operands.get(n) {
        Some(Operand::LiteralBit32(v)) => Some(*v),
        _ => None,
    }
}

fn id(i: &Instruction, n: usize) -> Result<Word, String> {
    match i.operands.get(n) {
        Some(Operand::IdRef(v)) => Ok(*v),
        _ => Err(format!("{:?}: operand {n} is not an id", i.class.opcode)),
    }
}

/// Emits an instruction and returns its result id.
fn emit(ctx: &mut Ctx, out: &mut Vec<Instruction>, op: Op, ty: Word, ops: Vec<Operand>) -> Word {
    let r = ctx.fresh();
    out.push(Instruction::new(op, Some(ty), Some(r), ops));
    r
}

/// A type's (component type, component count): scalars count one.
fn shape(ctx: &Ctx, ty: Word) -> Result<(Word, u32), String> {
    let t = ctx.global(ty).ok_or("unknown type")?;
    Ok(match t.class.opcode {
        Op::TypeVector => (id(t, 0)?, lit(t, 1).ok_or("bad vector")?),
        _ => (ty, 1),
    })
}

fn vec_or_scalar(ctx: &mut Ctx, comp: Word, n: u32) -> Word {
    if n == 1 { comp } else { ctx.vector(comp, n) }
}

/// The first `k` components of `value` (of type `ty`), with their type.
fn take(
    ctx: &mut Ctx,
    out: &mut Vec<Instruction>,
    value: Word,
    ty: Word,
    k: u32,
) -> Result<(Word, Word), String> {
    let (comp, n) = shape(ctx, ty)?;
    if n < k {
        return Err(format!(
            "a coordinate of {n} components for an image that needs {k}"
        ));
    }
    if n == k {
        return Ok((value, ty));
    }
    if k == 1 {
        let r = emit(
            ctx,
            out,
            Op::CompositeExtract,
            comp,
            vec![Operand::IdRef(value), Operand::LiteralBit32(0)],
        );
        return Ok((r, comp));
    }
    let vty = ctx.vector(comp, k);
    let mut ops = vec![Operand::IdRef(value), Operand::IdRef(value)];
    ops.extend((0..k).map(Operand::LiteralBit32));
    Ok((emit(ctx, out, Op::VectorShuffle, vty, ops), vty))
}

fn float_const(ctx: &mut Ctx, v: f32) -> Word {
    let f32t = ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(32)]);
    if let Some(found) = ctx.module.types_global_values.iter().find(|i| {
        i.class.opcode == Op::Constant
            && i.result_type == Some(f32t)
            && i.operands == [Operand::LiteralBit32(v.to_bits())]
    }) {
        return found.result_id.expect("constants have ids");
    }
    let r = ctx.fresh();
    ctx.module.types_global_values.push(Instruction::new(
        Op::Constant,
        Some(f32t),
        Some(r),
        vec![Operand::LiteralBit32(v.to_bits())],
    ));
    r
}

/// A float vector (or scalar) constant: `spatial` in the first `k - 1`
/// components, `last` in the last one where the image is arrayed.
fn coord_const(ctx: &mut Ctx, k: u32, arrayed: bool, spatial: f32, last: f32) -> Word {
    let f32t = ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(32)]);
    let parts: Vec<Word> = (0..k)
        .map(|i| {
            let v = if arrayed && i == k - 1 { last } else { spatial };
            float_const(ctx, v)
        })
        .collect();
    if k == 1 {
        return parts[0];
    }
    let vty = ctx.vector(f32t, k);
    let r = ctx.fresh();
    ctx.module.types_global_values.push(Instruction::new(
        Op::ConstantComposite,
        Some(vty),
        Some(r),
        parts.into_iter().map(Operand::IdRef).collect(),
    ));
    r
}

pub fn run(
    ctx: &mut Ctx,
    fid: Word,
    block: &Block,
    classes: &[ImageClass],
) -> Result<ImageInterface, String> {
    let func = ctx
        .module
        .functions
        .iter()
        .position(|f| f.def.as_ref().and_then(|d| d.result_id) == Some(fid))
        .ok_or("kernel function missing")?;
    let has_cl_images = ctx.module.types_global_values.iter().any(|i| {
        matches!(
            i.class.opcode,
            Op::TypeImage | Op::TypeSampler | Op::ConstantSampler
        )
    });
    if block.images.is_empty() && !has_cl_images {
        return Ok(ImageInterface::default());
    }
    forward_image_slots(ctx);
    let mut caps: HashSet<Capability> = HashSet::default();
    let mut bindings = Vec::new();
    let mut images: HashMap<Word, Img> = HashMap::default();
    let mut samplers: HashMap<Word, SamplerInfo> = HashMap::default();
    // Parameter definitions: (id, Vulkan type, variable).
    let mut loads: Vec<(Word, Word, Word)> = Vec::new();
    let undefs: HashMap<Word, Word> = ctx.module.functions[func].blocks[0]
        .instructions
        .iter()
        .filter(|i| i.class.opcode == Op::Undef)
        .filter_map(|i| Some((i.result_id?, i.result_type?)))
        .collect();
    let descriptor = |ctx: &mut Ctx, ty: Word, binding: u32| -> Word {
        let ptr = ctx.pointer(StorageClass::UniformConstant, ty);
        let var = ctx.fresh();
        ctx.module.types_global_values.push(Instruction::new(
            Op::Variable,
            Some(ptr),
            Some(var),
            vec![Operand::StorageClass(StorageClass::UniformConstant)],
        ));
        ctx.decorate(
            var,
            Decoration::DescriptorSet,
            vec![Operand::LiteralBit32(0)],
        );
        ctx.decorate(
            var,
            Decoration::Binding,
            vec![Operand::LiteralBit32(binding)],
        );
        var
    };
    let mut class_iter = classes.iter().copied();
    for p in &block.images {
        if p.sampler {
            let ty = ctx.ty(Op::TypeSampler, vec![]);
            let var = descriptor(ctx, ty, p.binding);
            loads.push((p.id, ty, var));
            samplers.insert(p.id, SamplerInfo::Spec(p.info_spec));
            bindings.push(Binding::Sampler);
            continue;
        }
        let class = class_iter.next().unwrap_or_default();
        let cl_ty = *undefs
            .get(&p.id)
            .ok_or("image parameter without its placeholder")?;
        let t = ctx.global(cl_ty).ok_or("unknown image type")?.clone();
        if t.class.opcode != Op::TypeImage {
            return Err("an image argument whose type is not an image".into());
        }
        let dim = match t.operands.get(1) {
            Some(Operand::Dim(d)) => *d,
            _ => return Err("bad image type".into()),
        };
        let arrayed = lit(&t, 3) == Some(1);
        let access = match t.operands.get(7) {
            Some(Operand::AccessQualifier(a)) => *a,
            _ => AccessQualifier::ReadOnly,
        };
        let dims = match dim {
            Dim::Dim1D => 1,
            Dim::Dim2D => 2,
            Dim::Dim3D => 3,
            Dim::DimBuffer => 1,
            d => return Err(format!("images of dimension {d:?} are not supported")),
        };
        // Depth images are colour images of one channel to Vulkan: their
        // reads and writes take scalars, widened below.
        if lit(&t, 4) == Some(1) {
            return Err("multi-sampled images are not supported".into());
        }
        let sampled = access == AccessQualifier::ReadOnly;
        let scalar = match class {
            ImageClass::Float
            | ImageClass::FloatFilteredInKernel
            | ImageClass::Unorm565
            | ImageClass::Unorm555 => ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(32)]),
            ImageClass::Int => ctx.ty(
                Op::TypeInt,
                vec![Operand::LiteralBit32(32), Operand::LiteralBit32(1)],
            ),
            ImageClass::Uint => ctx.uint(32),
        };
        let ty = ctx.ty(
            Op::TypeImage,
            vec![
                Operand::IdRef(scalar),
                Operand::Dim(dim),
                Operand::LiteralBit32(0),
                Operand::LiteralBit32(arrayed as u32),
                Operand::LiteralBit32(0),
                Operand::LiteralBit32(if sampled { 1 } else { 2 }),
                Operand::ImageFormat(ImageFormat::Unknown),
            ],
        );
        let texels = dim == Dim::DimBuffer;
        if dim == Dim::Dim1D || texels {
            caps.insert(match (texels, sampled) {
                (false, true) => Capability::Sampled1D,
                (false, false) => Capability::Image1D,
                (true, true) => Capability::SampledBuffer,
                (true, false) => Capability::ImageBuffer,
            });
        }
        let var = descriptor(ctx, ty, p.binding);
        loads.push((p.id, ty, var));
        images.insert(
            p.id,
            Img {
                ty,
                scalar,
                sampled,
                coords: dims + arrayed as u32,
                direct: !arrayed && dims < 3,
                texels,
                by_hand: class == ImageClass::FloatFilteredInKernel
                    || class.packed_bits().is_some(),
                packed: class.packed_bits(),
                info_spec: p.info_spec,
            },
        );
        bindings.push(match (texels, sampled) {
            (false, true) => Binding::SampledImage,
            (false, false) => Binding::StorageImage,
            (true, true) => Binding::UniformTexels,
            (true, false) => Binding::StorageTexels,
        });
    }
    // Literal samplers become descriptors after the parameters, one per
    // distinct sampler: llvm-spirv makes a constant for every use of a
    // sampler variable, and a kernel that samples at many places would
    // otherwise pass the stage's sampler limit.
    let mut literal_samplers = Vec::new();
    let mut made: HashMap<(cl_addressing_mode, bool, cl_filter_mode), Word> = HashMap::default();
    let constants: Vec<Instruction> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::ConstantSampler)
        .cloned()
        .collect();
    ctx.module
        .types_global_values
        .retain(|i| i.class.opcode != Op::ConstantSampler);
    for c in constants {
        let r = c.result_id.ok_or("sampler constant without id")?;
        let addressing = match c.operands.first() {
            Some(Operand::SamplerAddressingMode(m)) => match *m {
                SamplerAddressingMode::None => CL_ADDRESS_NONE,
                SamplerAddressingMode::ClampToEdge => CL_ADDRESS_CLAMP_TO_EDGE,
                SamplerAddressingMode::Clamp => CL_ADDRESS_CLAMP,
                SamplerAddressingMode::Repeat => CL_ADDRESS_REPEAT,
                SamplerAddressingMode::RepeatMirrored => CL_ADDRESS_MIRRORED_REPEAT,
            },
            _ => return Err("bad sampler constant".into()),
        };
        let normalized = lit(&c, 1) == Some(1);
        let filter = match c.operands.get(2) {
            Some(Operand::SamplerFilterMode(SamplerFilterMode::Linear)) => CL_FILTER_LINEAR,
            _ => CL_FILTER_NEAREST,
        };
        let ty = c.result_type.ok_or("sampler constant without type")?;
        let var = match made.get(&(addressing, normalized, filter)) {
            Some(&var) => var,
            None => {
                let binding = bindings.len() as u32;
                bindings.push(Binding::Sampler);
                literal_samplers.push(LiteralSampler {
                    binding,
                    normalized,
                    addressing,
                    filter,
                });
                let var = descriptor(ctx, ty, binding);
                made.insert((addressing, normalized, filter), var);
                var
            }
        };
        loads.push((r, ty, var));
        samplers.insert(
            r,
            SamplerInfo::Const {
                normalized,
                linear: filter == CL_FILTER_LINEAR,
                repeat: addressing == CL_ADDRESS_REPEAT,
                mirror: addressing == CL_ADDRESS_MIRRORED_REPEAT,
                border: addressing == CL_ADDRESS_CLAMP,
            },
        );
    }

    // Each sampler has a twin for 1D and 2D images: Vulkan's samplers
    // take unnormalized coordinates only for those, and they avoid the
    // rounding of dividing by the size.
    let mut direct: HashMap<Word, Word> = HashMap::default();
    let mut direct_samplers = Vec::new();
    let sampler_bindings: Vec<(Word, u32)> = loads
        .iter()
        .filter(|(r, _, _)| samplers.contains_key(r))
        .map(|&(r, _, var)| {
            let b = ctx
                .decoration_literal(var, Decoration::Binding)
                .expect("descriptors have bindings");
            (r, b)
        })
        .collect();
    // One twin per sampler descriptor, loaded for each of its loads.
    let mut twins: HashMap<u32, Word> = HashMap::default();
    for (r, b) in sampler_bindings {
        let ty = ctx.ty(Op::TypeSampler, vec![]);
        let var = match twins.get(&b) {
            Some(&var) => var,
            None => {
                let binding = bindings.len() as u32;
                bindings.push(Binding::Sampler);
                direct_samplers.push((binding, b));
                let var = descriptor(ctx, ty, binding);
                twins.insert(b, var);
                var
            }
        };
        let twin = ctx.fresh();
        loads.push((twin, ty, var));
        direct.insert(r, twin);
    }

    // The loads replace the placeholders, or come after the variables.
    let entry = &mut ctx.module.functions[func].blocks[0].instructions;
    let placeholders: HashSet<Word> = loads.iter().map(|l| l.0).collect();
    entry.retain(|i| {
        !(i.class.opcode == Op::Undef && i.result_id.is_some_and(|r| placeholders.contains(&r)))
    });
    let at = entry
        .iter()
        .take_while(|i| i.class.opcode == Op::Variable)
        .count();
    let load_code: Vec<Instruction> = loads
        .iter()
        .map(|&(r, ty, var)| {
            Instruction::new(Op::Load, Some(ty), Some(r), vec![Operand::IdRef(var)])
        })
        .collect();
    entry.splice(at..at, load_code);

    // The image instructions.
    let u32t = ctx.uint(32);
    let f32t = ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(32)]);
    let boolt = ctx.ty(Op::TypeBool, vec![]);
    let zero = ctx.const_u32(0);
    let fzero = float_const(ctx, 0.0);
    let fone = float_const(ctx, 1.0);
    let mut sampled_images: HashMap<Word, (Word, Word)> = HashMap::default();
    let local_types: HashMap<Word, Word> = ctx.module.functions[func]
        .blocks
        .iter()
        .flat_map(|b| b.instructions.iter())
        .filter_map(|i| Some((i.result_id?, i.result_type?)))
        .collect();
    let type_of = |ctx: &Ctx, v: Word| -> Result<Word, String> {
        local_types
            .get(&v)
            .copied()
            .or_else(|| ctx.type_of(v))
            .ok_or_else(|| "an image operand of unknown type".to_string())
    };
    let blocks = std::mem::take(&mut ctx.module.functions[func].blocks);
    let mut new_blocks = Vec::with_capacity(blocks.len());
    for mut b in blocks {
        let mut out = Vec::with_capacity(b.instructions.len());
        for i in b.instructions.drain(..) {
            let image_of = |v: Word| -> Option<Img> {
                images
                    .get(&v)
                    .or_else(|| sampled_images.get(&v).and_then(|(img, _)| images.get(img)))
                    .copied()
            };
            let uses_image =
                ids_used(&i).any(|u| image_of(u).is_some() || samplers.contains_key(&u));
            if !uses_image {
                out.push(i);
                continue;
            }
            let rt = i.result_type;
            let rid = i.result_id;
            // Gives the result as the instruction's own type: a bitcast
            // where the image's texel type differs.
            let texel_result = |ctx: &mut Ctx,
                                out: &mut Vec<Instruction>,
                                img: &Img,
                                op: Op,
                                ops: Vec<Operand>|
             -> Result<(), String> {
                let want = rt.ok_or("image read without a type")?;
                let (comp, n) = shape(ctx, want)?;
                let width = ctx.global(comp).and_then(|t| lit(t, 0));
                if !(n == 4 || n == 1) || width != Some(32) {
                    return Err("image reads of half or narrow texels are not supported yet".into());
                }
                let have = ctx.vector(img.scalar, 4);
                // Sampled texels arrive unpacked already.
                let unpack = img.packed.filter(|_| op != Op::CopyObject);
                if n == 4 && have == want && op != Op::ImageRead && unpack.is_none() {
                    out.push(Instruction::new(op, Some(want), rid, ops));
                    return Ok(());
                }
                let mut tmp = emit(ctx, out, op, have, ops);
                if op == Op::ImageRead {
                    // Storage reads see the storage view's order.
                    tmp = swap_red_blue(ctx, out, img, have, tmp);
                }
                if let Some(bits) = unpack {
                    tmp = unpack_texel(ctx, out, bits, tmp);
                }
                // A depth image's read is the first channel of the texel.
                let (value, ty) = if n == 1 {
                    let first = emit(
                        ctx,
                        out,
                        Op::CompositeExtract,
                        img.scalar,
                        vec![Operand::IdRef(tmp), Operand::LiteralBit32(0)],
                    );
                    (first, img.scalar)
                } else {
                    (tmp, have)
                };
                let cast = if ty == want {
                    Op::CopyObject
                } else {
                    Op::Bitcast
                };
                out.push(Instruction::new(
                    cast,
                    Some(want),
                    rid,
                    vec![Operand::IdRef(value)],
                ));
                Ok(())
            };
            match i.class.opcode {
                Op::SampledImage => {
                    let (img_id, smp) = (id(&i, 0)?, id(&i, 1)?);
                    let img = images
                        .get(&img_id)
                        .ok_or("OpSampledImage of an unknown image")?;
                    if !img.sampled {
                        return Err("a sampler used with a write-only or read-write image".into());
                    }
                    let sty = ctx.ty(Op::TypeSampledImage, vec![Operand::IdRef(img.ty)]);
                    let r = rid.ok_or("OpSampledImage without id")?;
                    sampled_images.insert(r, (img_id, smp));
                    let with = if img.direct {
                        *direct.get(&smp).ok_or("sampling with an unknown sampler")?
                    } else {
                        smp
                    };
                    out.push(Instruction::new(
                        Op::SampledImage,
                        Some(sty),
                        Some(r),
                        vec![Operand::IdRef(img_id), Operand::IdRef(with)],
                    ));
                }
                Op::ImageSampleExplicitLod => {
                    let si = id(&i, 0)?;
                    let (img_id, smp) = *sampled_images
                        .get(&si)
                        .ok_or("sampling without OpSampledImage")?;
                    let img = images[&img_id];
                    let norm = *samplers
                        .get(&smp)
                        .ok_or("sampling with an unknown sampler")?;
                    let c0 = id(&i, 1)?;
                    let (coord, cty) = take(ctx, &mut out, c0, type_of(ctx, c0)?, img.coords)?;
                    let k = img.coords;
                    let arrayed = k > match ctx.global(img.ty).and_then(|t| t.operands.get(1)) {
                        Some(Operand::Dim(Dim::Dim1D)) => 1,
                        Some(Operand::Dim(Dim::Dim2D)) => 2,
                        _ => 3,
                    };
                    let (comp, _) = shape(ctx, cty)?;
                    let is_int = ctx
                        .global(comp)
                        .is_some_and(|t| t.class.opcode == Op::TypeInt);
                    let fvec = vec_or_scalar(ctx, f32t, k);
                    let uvec = vec_or_scalar(ctx, u32t, k);
                    // The image size as floats, 1 for the array index.
                    let size = emit(
                        ctx,
                        &mut out,
                        Op::ImageQuerySizeLod,
                        uvec,
                        vec![Operand::IdRef(img_id), Operand::IdRef(zero)],
                    );
                    let mut fsize = emit(
                        ctx,
                        &mut out,
                        Op::ConvertUToF,
                        fvec,
                        vec![Operand::IdRef(size)],
                    );
                    caps.insert(Capability::ImageQuery);
                    if arrayed {
                        fsize = emit(
                            ctx,
                            &mut out,
                            Op::CompositeInsert,
                            fvec,
                            vec![
                                Operand::IdRef(fone),
                                Operand::IdRef(fsize),
                                Operand::LiteralBit32(k - 1),
                            ],
                        );
                    }
                    let new_coord = if img.direct {
                        // The twin sampler takes the coordinates as the
                        // OpenCL sampler does.
                        if is_int {
                            let f = emit(
                                ctx,
                                &mut out,
                                Op::ConvertSToF,
                                fvec,
                                vec![Operand::IdRef(coord)],
                            );
                            let half = coord_const(ctx, k, false, 0.5, 0.5);
                            emit(
                                ctx,
                                &mut out,
                                Op::FAdd,
                                fvec,
                                vec![Operand::IdRef(f), Operand::IdRef(half)],
                            )
                        } else {
                            float_coord(ctx, &mut out, coord, fsize, k, false, norm, true)?
                        }
                    } else if is_int {
                        // Integer coordinates name texels: their centres.
                        let f = emit(
                            ctx,
                            &mut out,
                            Op::ConvertSToF,
                            fvec,
                            vec![Operand::IdRef(coord)],
                        );
                        let half = coord_const(ctx, k, arrayed, 0.5, 0.0);
                        let c = emit(
                            ctx,
                            &mut out,
                            Op::FAdd,
                            fvec,
                            vec![Operand::IdRef(f), Operand::IdRef(half)],
                        );
                        emit(
                            ctx,
                            &mut out,
                            Op::FDiv,
                            fvec,
                            vec![Operand::IdRef(c), Operand::IdRef(fsize)],
                        )
                    } else {
                        float_coord(ctx, &mut out, coord, fsize, k, arrayed, norm, false)?
                    };
                    let ops = vec![
                        Operand::IdRef(si),
                        Operand::IdRef(new_coord),
                        Operand::ImageOperands(ImageOperands::LOD),
                        Operand::IdRef(fzero),
                    ];
                    // Orders without alpha read alpha 1, the border colour
                    // of CLK_ADDRESS_CLAMP included (Vulkan's has alpha 0):
                    // the image's info word says which orders those are.
                    let have = ctx.vector(img.scalar, 4);
                    let mut sample = emit(ctx, &mut out, Op::ImageSampleExplicitLod, have, ops);
                    if let Some(bits) = img.packed {
                        sample = unpack_texel(ctx, &mut out, bits, sample);
                    }
                    if (!img.direct || img.by_hand) && !is_int && img.scalar == f32t {
                        sample = filter_in_kernel(
                            ctx,
                            &mut out,
                            img_id,
                            coord,
                            size,
                            k,
                            arrayed,
                            (img.by_hand, img.packed),
                            norm,
                            sample,
                        );
                    }
                    let word = info_word(ctx, img.info_spec);
                    let bit = ctx.const_u32(NO_ALPHA);
                    let masked = emit(
                        ctx,
                        &mut out,
                        Op::BitwiseAnd,
                        u32t,
                        vec![Operand::IdRef(word), Operand::IdRef(bit)],
                    );
                    let no_alpha = emit(
                        ctx,
                        &mut out,
                        Op::INotEqual,
                        boolt,
                        vec![Operand::IdRef(masked), Operand::IdRef(zero)],
                    );
                    let one = if img.scalar == f32t {
                        fone
                    } else {
                        ctx.const_int(img.scalar, 1)
                    };
                    let alpha = emit(
                        ctx,
                        &mut out,
                        Op::CompositeExtract,
                        img.scalar,
                        vec![Operand::IdRef(sample), Operand::LiteralBit32(3)],
                    );
                    let alpha = emit(
                        ctx,
                        &mut out,
                        Op::Select,
                        img.scalar,
                        vec![
                            Operand::IdRef(no_alpha),
                            Operand::IdRef(one),
                            Operand::IdRef(alpha),
                        ],
                    );
                    let fixed = emit(
                        ctx,
                        &mut out,
                        Op::CompositeInsert,
                        have,
                        vec![
                            Operand::IdRef(alpha),
                            Operand::IdRef(sample),
                            Operand::LiteralBit32(3),
                        ],
                    );
                    let ops = vec![Operand::IdRef(fixed)];
                    texel_result(ctx, &mut out, &img, Op::CopyObject, ops)?;
                }
                Op::ImageRead => {
                    let img_id = id(&i, 0)?;
                    let img = *images.get(&img_id).ok_or("a read of an unknown image")?;
                    let c0 = id(&i, 1)?;
                    let (coord, _) = take(ctx, &mut out, c0, type_of(ctx, c0)?, img.coords)?;
                    if img.sampled {
                        let mut ops = vec![Operand::IdRef(img_id), Operand::IdRef(coord)];
                        if !img.texels {
                            ops.push(Operand::ImageOperands(ImageOperands::LOD));
                            ops.push(Operand::IdRef(zero));
                        }
                        texel_result(ctx, &mut out, &img, Op::ImageFetch, ops)?;
                    } else {
                        caps.insert(Capability::StorageImageReadWithoutFormat);
                        let ops = vec![Operand::IdRef(img_id), Operand::IdRef(coord)];
                        texel_result(ctx, &mut out, &img, Op::ImageRead, ops)?;
                    }
                }
                Op::ImageWrite => {
                    let img_id = id(&i, 0)?;
                    let img = *images.get(&img_id).ok_or("a write to an unknown image")?;
                    if img.sampled {
                        return Err("a write to a read-only image".into());
                    }
                    let c0 = id(&i, 1)?;
                    let (coord, _) = take(ctx, &mut out, c0, type_of(ctx, c0)?, img.coords)?;
                    let mut texel = id(&i, 2)?;
                    let mut tty = type_of(ctx, texel)?;
                    let (comp, n) = shape(ctx, tty)?;
                    if !(n == 4 || n == 1) || ctx.global(comp).and_then(|t| lit(t, 0)) != Some(32) {
                        return Err(
                            "image writes of half or narrow texels are not supported yet".into(),
                        );
                    }
                    if n == 1 {
                        // A depth image's write: the value in every channel.
                        tty = ctx.vector(comp, 4);
                        texel = emit(
                            ctx,
                            &mut out,
                            Op::CompositeConstruct,
                            tty,
                            vec![Operand::IdRef(texel); 4],
                        );
                    }
                    let have = ctx.vector(img.scalar, 4);
                    if have != tty {
                        texel = emit(
                            ctx,
                            &mut out,
                            Op::Bitcast,
                            have,
                            vec![Operand::IdRef(texel)],
                        );
                    }
                    let mut texel = swap_red_blue(ctx, &mut out, &img, have, texel);
                    if let Some(bits) = img.packed {
                        texel = pack_texel(ctx, &mut out, bits, texel);
                    }
                    caps.insert(Capability::StorageImageWriteWithoutFormat);
                    out.push(Instruction::new(
                        Op::ImageWrite,
                        None,
                        None,
                        vec![
                            Operand::IdRef(img_id),
                            Operand::IdRef(coord),
                            Operand::IdRef(texel),
                        ],
                    ));
                }
                Op::ImageQuerySizeLod | Op::ImageQuerySize => {
                    let img_id = id(&i, 0)?;
                    let img = *images.get(&img_id).ok_or("a query of an unknown image")?;
                    let want = rt.ok_or("query without type")?;
                    let (comp, n) = shape(ctx, want)?;
                    let ty32 = vec_or_scalar(ctx, u32t, n);
                    // Sampled images have levels of detail; storage
                    // images and texel buffers do not.
                    let lod = img.sampled && !img.texels;
                    let ops = if lod {
                        vec![Operand::IdRef(img_id), Operand::IdRef(zero)]
                    } else {
                        vec![Operand::IdRef(img_id)]
                    };
                    let op = if lod {
                        Op::ImageQuerySizeLod
                    } else {
                        Op::ImageQuerySize
                    };
                    caps.insert(Capability::ImageQuery);
                    if ctx.global(comp).and_then(|t| lit(t, 0)) == Some(64) {
                        let q = emit(ctx, &mut out, op, ty32, ops);
                        out.push(Instruction::new(
                            Op::UConvert,
                            Some(want),
                            rid,
                            vec![Operand::IdRef(q)],
                        ));
                    } else {
                        out.push(Instruction::new(op, Some(ty32), rid, ops));
                        if ty32 != want {
                            return Err("an image size query of an unexpected type".into());
                        }
                    }
                }
                Op::ImageQueryOrder | Op::ImageQueryFormat => {
                    let img = *images
                        .get(&id(&i, 0)?)
                        .ok_or("a query of an unknown image")?;
                    let format = i.class.opcode == Op::ImageQueryFormat;
                    let mut v = info_word(ctx, img.info_spec + format as u32);
                    if !format {
                        let mask = ctx.const_u32(NO_ALPHA - 1);
                        v = emit(
                            ctx,
                            &mut out,
                            Op::BitwiseAnd,
                            u32t,
                            vec![Operand::IdRef(v), Operand::IdRef(mask)],
                        );
                    }
                    out.push(Instruction::new(
                        Op::CopyObject,
                        rt,
                        rid,
                        vec![Operand::IdRef(v)],
                    ));
                }
                op => {
                    return Err(format!(
                        "{op:?} on an image or sampler is not supported yet"
                    ));
                }
            }
        }
        b.instructions = out;
        new_blocks.push(b);
    }
    ctx.module.functions[func].blocks = new_blocks;

    // The OpenCL image types, and what refers to them, go.
    let mut gone: HashSet<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::TypeImage && i.operands.len() > 7)
        .filter_map(|i| i.result_id)
        .collect();
    loop {
        let more: Vec<Word> = ctx
            .module
            .types_global_values
            .iter()
            .filter(|i| i.result_id.is_some_and(|r| !gone.contains(&r)))
            .filter(|i| ids_used(i).any(|u| gone.contains(&u)))
            .filter_map(|i| i.result_id)
            .collect();
        if more.is_empty() {
            break;
        }
        gone.extend(more);
    }
    let used_in_code = ctx.module.functions.iter().any(|f| {
        f.blocks
            .iter()
            .flat_map(|b| b.instructions.iter())
            .any(|i| {
                i.result_type.is_some_and(|t| gone.contains(&t))
                    || ids_used(i).any(|u| gone.contains(&u))
            })
    });
    if used_in_code {
        return Err("an OpenCL image value is used in a way vkcl cannot rewrite yet".into());
    }
    ctx.module
        .types_global_values
        .retain(|i| !i.result_id.is_some_and(|r| gone.contains(&r)));
    ctx.module
        .debug_names
        .retain(|i| !matches!(i.operands.first(), Some(Operand::IdRef(t)) if gone.contains(t)));
    ctx.module
        .annotations
        .retain(|i| !matches!(i.operands.first(), Some(Operand::IdRef(t)) if gone.contains(t)));
    let mut caps: Vec<Capability> = caps.into_iter().collect();
    caps.sort_by_key(|c| *c as u32);
    ctx.image_caps = caps.clone();
    Ok(ImageInterface {
        bindings,
        literal_samplers,
        caps,
        direct_samplers,
    })
}

/// Loads push-constant member `member` (a u32) of the block `var`.
/// Unoptimised code keeps image and sampler arguments in `Function`
/// variables (stored once, loaded where used), which Vulkan's opaque
/// types cannot live in: each load becomes the value stored.
fn forward_image_slots(ctx: &mut Ctx) {
    let opaque: HashSet<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|t| {
            matches!(
                t.class.opcode,
                Op::TypeImage | Op::TypeSampler | Op::TypeSampledImage
            )
        })
        .filter_map(|t| t.result_id)
        .collect();
    let slot_types: HashSet<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|t| {
            ctx.pointer_parts(t.result_id.unwrap_or(0))
                .is_some_and(|(sc, p)| sc == StorageClass::Function && opaque.contains(&p))
        })
        .filter_map(|t| t.result_id)
        .collect();
    if slot_types.is_empty() {
        return;
    }
    let code = || ctx.module.functions.iter().flat_map(|f| f.all_inst_iter());
    let slots: HashSet<Word> = code()
        .filter(|i| {
            i.class.opcode == Op::Variable && i.result_type.is_some_and(|t| slot_types.contains(&t))
        })
        .filter_map(|i| i.result_id)
        .collect();
    let mut stored: HashMap<Word, Vec<Word>> = HashMap::default();
    for i in code().filter(|i| i.class.opcode == Op::Store) {
        if let (Some(p), Some(v)) = (id_at(i, 0), id_at(i, 1))
            && slots.contains(&p)
        {
            stored.entry(p).or_default().push(v);
        }
    }
    // Slots written once; others stay, and are refused by name below.
    let value: HashMap<Word, Word> = stored
        .into_iter()
        .filter_map(|(p, v)| (v.len() == 1).then(|| (p, v[0])))
        .collect();
    let mut subst: HashMap<Word, Word> = HashMap::default();
    for i in code().filter(|i| i.class.opcode == Op::Load) {
        if let (Some(r), Some(&v)) = (i.result_id, id_at(i, 0).and_then(|p| value.get(&p))) {
            subst.insert(r, v);
        }
    }
    for f in &mut ctx.module.functions {
        for b in &mut f.blocks {
            b.instructions.retain(|i| {
                let slot = match i.class.opcode {
                    Op::Variable => i.result_id,
                    Op::Store => id_at(i, 0),
                    _ => None,
                };
                !slot.is_some_and(|p| value.contains_key(&p))
                    && !i.result_id.is_some_and(|r| subst.contains_key(&r))
            });
            for i in &mut b.instructions {
                for o in &mut i.operands {
                    if let Operand::IdRef(x) = o
                        && let Some(&v) = subst.get(x)
                    {
                        *x = v;
                    }
                }
            }
        }
    }
}

/// `texel` (a 4-vector of type `ty`) with red and blue exchanged where
/// the image's order word says so ([`SWAP_RED_BLUE`]): a choice between
/// constants once the pipeline is specialized.
fn swap_red_blue(
    ctx: &mut Ctx,
    out: &mut Vec<Instruction>,
    img: &Img,
    ty: Word,
    texel: Word,
) -> Word {
    let u32t = ctx.uint(32);
    let boolt = ctx.ty(Op::TypeBool, vec![]);
    let word = info_word(ctx, img.info_spec);
    let bit = ctx.const_u32(SWAP_RED_BLUE);
    let zero = ctx.const_u32(0);
    let set = emit(
        ctx,
        out,
        Op::BitwiseAnd,
        u32t,
        vec![Operand::IdRef(word), Operand::IdRef(bit)],
    );
    let swap = emit(
        ctx,
        out,
        Op::INotEqual,
        boolt,
        vec![Operand::IdRef(set), Operand::IdRef(zero)],
    );
    let swapped = emit(
        ctx,
        out,
        Op::VectorShuffle,
        ty,
        vec![
            Operand::IdRef(texel),
            Operand::IdRef(texel),
            Operand::LiteralBit32(2),
            Operand::LiteralBit32(1),
            Operand::LiteralBit32(0),
            Operand::LiteralBit32(3),
        ],
    );
    emit(
        ctx,
        out,
        Op::Select,
        ty,
        vec![
            Operand::IdRef(swap),
            Operand::IdRef(swapped),
            Operand::IdRef(texel),
        ],
    )
}

/// Component `k` of vector `v`.
fn component(ctx: &mut Ctx, out: &mut Vec<Instruction>, ty: Word, v: Word, k: u32) -> Word {
    emit(
        ctx,
        out,
        Op::CompositeExtract,
        ty,
        vec![Operand::IdRef(v), Operand::LiteralBit32(k)],
    )
}

/// The colour of a packed 16-bit texel read through its one-channel
/// 16-bit normalized view (`raw.x` is the bits over 65535): the bits
/// recovered, each channel converted as OpenCL converts normalized
/// integers, alpha 1.
fn unpack_texel(ctx: &mut Ctx, out: &mut Vec<Instruction>, bits: [u32; 3], raw: Word) -> Word {
    let u32t = ctx.uint(32);
    let f32t = ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(32)]);
    let v4 = ctx.vector(f32t, 4);
    let x = component(ctx, out, f32t, raw, 0);
    let scale = float_const(ctx, 65535.0);
    let one = float_const(ctx, 1.0);
    let mut e = Emit {
        ctx,
        out,
        glsl: &mut None,
    };
    let scaled = e.op(Op::FMul, f32t, &[x, scale]);
    let rounded = e.glsl(G::RoundEven, f32t, &[scaled]);
    let word = e.op(Op::ConvertFToU, u32t, &[rounded]);
    let mut channels = Vec::new();
    let mut shift = bits[1] + bits[2];
    for (c, b) in bits.into_iter().enumerate() {
        let (amount, mask) = (e.konst(u32t, shift.into()), e.konst(u32t, (1 << b) - 1));
        let moved = e.op(Op::ShiftRightLogical, u32t, &[word, amount]);
        let v = e.op(Op::BitwiseAnd, u32t, &[moved, mask]);
        let f = e.op(Op::ConvertUToF, f32t, &[v]);
        let max = float_const(e.ctx, ((1u32 << b) - 1) as f32);
        channels.push(e.op(Op::FDiv, f32t, &[f, max]));
        shift -= bits.get(c + 1).copied().unwrap_or(0);
    }
    channels.push(one);
    e.op(Op::CompositeConstruct, v4, &channels)
}

/// The inverse of [`unpack_texel`]: a colour packed into the bits of a
/// 16-bit texel, each channel clamped to [0, 1] (NaN to 0) and rounded
/// to the nearest step, as the value the 16-bit normalized view stores
/// as those bits.
fn pack_texel(ctx: &mut Ctx, out: &mut Vec<Instruction>, bits: [u32; 3], texel: Word) -> Word {
    let u32t = ctx.uint(32);
    let f32t = ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(32)]);
    let v4 = ctx.vector(f32t, 4);
    let (fzero, fone) = (float_const(ctx, 0.0), float_const(ctx, 1.0));
    let scale = float_const(ctx, 65535.0);
    let parts: Vec<Word> = (0..3)
        .map(|c| component(ctx, out, f32t, texel, c))
        .collect();
    let mut e = Emit {
        ctx,
        out,
        glsl: &mut None,
    };
    let mut word = e.konst(u32t, 0);
    for (x, b) in parts.into_iter().zip(bits) {
        // NClamp: a NaN gives 0.
        let clamped = e.glsl(G::NClamp, f32t, &[x, fzero, fone]);
        let max = float_const(e.ctx, ((1u32 << b) - 1) as f32);
        let scaled = e.op(Op::FMul, f32t, &[clamped, max]);
        let rounded = e.glsl(G::RoundEven, f32t, &[scaled]);
        let v = e.op(Op::ConvertFToU, u32t, &[rounded]);
        let amount = e.konst(u32t, b.into());
        let moved = e.op(Op::ShiftLeftLogical, u32t, &[word, amount]);
        word = e.op(Op::BitwiseOr, u32t, &[moved, v]);
    }
    let f = e.op(Op::ConvertUToF, f32t, &[word]);
    let x = e.op(Op::FDiv, f32t, &[f, scale]);
    e.op(Op::CompositeConstruct, v4, &[x, fzero, fzero, fone])
}

/// The specialization constant with SpecId `spec` (an image's or a
/// sampler's info word), made once.
fn info_word(ctx: &mut Ctx, spec: u32) -> Word {
    let existing = ctx.module.annotations.iter().find_map(|d| {
        (d.class.opcode == Op::Decorate
            && d.operands.get(1) == Some(&Operand::Decoration(Decoration::SpecId))
            && d.operands.get(2) == Some(&Operand::LiteralBit32(spec)))
        .then(|| match d.operands.first() {
            Some(Operand::IdRef(id)) => Some(*id),
            _ => None,
        })
        .flatten()
    });
    if let Some(id) = existing {
        return id;
    }
    let u32t = ctx.uint(32);
    let id = ctx.fresh();
    ctx.module.types_global_values.push(Instruction::new(
        Op::SpecConstant,
        Some(u32t),
        Some(id),
        vec![Operand::LiteralBit32(0)],
    ));
    ctx.decorate(id, Decoration::SpecId, vec![Operand::LiteralBit32(spec)]);
    id
}

/// Linear filtering done in the kernel, where Vulkan's is not precise
/// enough for OpenCL: the weights come from the coordinate as the OpenCL C
/// specification writes them, and the two, four or eight texels are
/// fetched (wrapped, mirrored, clamped to the edge, or the border colour
/// for CLK_ADDRESS_CLAMP).
///
/// * 3D images and arrays at unnormalized coordinates, on every device:
///   Vulkan samples those only at normalized coordinates, and dividing by
///   the size puts a coordinate at a texel centre a unit in the last place
///   beside it, so that the neighbour gets a tiny weight, which is a large
///   error wherever it is much larger than the texel;
/// * every linear read of an image whose class says the device filters its
///   format too coarsely (`by_hand`).
///
/// Gives `sample` where the sampler does not call for it; for a sampler
/// argument the choice is a specialization constant, which the driver
/// folds.
#[allow(clippy::too_many_arguments)]
fn filter_in_kernel(
    ctx: &mut Ctx,
    out: &mut Vec<Instruction>,
    image: Word,
    coord: Word,
    size: Word,
    k: u32,
    arrayed: bool,
    (by_hand, packed): (bool, Option<[u32; 3]>),
    info: SamplerInfo,
    sample: Word,
) -> Word {
    let u32t = ctx.uint(32);
    let f32t = ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(32)]);
    let boolt = ctx.ty(Op::TypeBool, vec![]);
    let v4 = ctx.vector(f32t, 4);
    let b4 = ctx.vector(boolt, 4);
    let uvec = vec_or_scalar(ctx, u32t, k);
    let glsl = ctx.ext_import_or_add("GLSL.std.450");
    let zero = ctx.const_u32(0);
    // The sampler's modes.
    let (linear, normalized, repeat, mirror, border) = match info {
        SamplerInfo::Const {
            normalized,
            linear,
            repeat,
            mirror,
            border,
        } => (
            Cond::Static(linear),
            Cond::Static(normalized),
            Cond::Static(repeat),
            Cond::Static(mirror),
            Cond::Static(border),
        ),
        SamplerInfo::Spec(spec) => {
            let flags = info_word(ctx, spec);
            let mut bit = |ctx: &mut Ctx, mask: u32| {
                let m = ctx.const_u32(mask);
                let and = emit(
                    ctx,
                    out,
                    Op::BitwiseAnd,
                    u32t,
                    vec![Operand::IdRef(flags), Operand::IdRef(m)],
                );
                Cond::Dynamic(emit(
                    ctx,
                    out,
                    Op::INotEqual,
                    boolt,
                    vec![Operand::IdRef(and), Operand::IdRef(zero)],
                ))
            };
            (
                bit(ctx, SAMPLER_LINEAR),
                bit(ctx, SAMPLER_NORMALIZED),
                bit(ctx, SAMPLER_REPEAT),
                bit(ctx, SAMPLER_MIRROR),
                bit(ctx, SAMPLER_BORDER),
            )
        }
    };
    let not = |ctx: &mut Ctx, out: &mut Vec<Instruction>, c: Cond| match c {
        Cond::Static(v) => Cond::Static(!v),
        Cond::Dynamic(v) => Cond::Dynamic(emit(
            ctx,
            out,
            Op::LogicalNot,
            boolt,
            vec![Operand::IdRef(v)],
        )),
    };
    let and = |ctx: &mut Ctx, out: &mut Vec<Instruction>, a: Cond, b: Cond| match (a, b) {
        (Cond::Static(false), _) | (_, Cond::Static(false)) => Cond::Static(false),
        (Cond::Static(true), c) | (c, Cond::Static(true)) => c,
        (Cond::Dynamic(x), Cond::Dynamic(y)) => Cond::Dynamic(emit(
            ctx,
            out,
            Op::LogicalAnd,
            boolt,
            vec![Operand::IdRef(x), Operand::IdRef(y)],
        )),
    };
    // `a` where `c` holds, else `b` (scalars).
    let pick =
        |ctx: &mut Ctx, out: &mut Vec<Instruction>, ty: Word, c: Cond, a: Word, b: Word| match c {
            Cond::Static(true) => a,
            Cond::Static(false) => b,
            Cond::Dynamic(c) => emit(
                ctx,
                out,
                Op::Select,
                ty,
                vec![Operand::IdRef(c), Operand::IdRef(a), Operand::IdRef(b)],
            ),
        };
    let wanted = if by_hand {
        linear
    } else {
        let unnormalized = not(ctx, out, normalized);
        and(ctx, out, linear, unnormalized)
    };
    // Elsewhere only unnormalized coordinates are filtered here, and those
    // never repeat or mirror.
    let (normalized, repeat, mirror) = if by_hand {
        (normalized, repeat, mirror)
    } else {
        (
            Cond::Static(false),
            Cond::Static(false),
            Cond::Static(false),
        )
    };
    if wanted == Cond::Static(false) {
        return sample;
    }
    let ext = |ctx: &mut Ctx, out: &mut Vec<Instruction>, ty: Word, op: u32, args: &[Word]| {
        let mut ops = vec![Operand::IdRef(glsl), Operand::LiteralExtInstInteger(op)];
        ops.extend(args.iter().map(|&a| Operand::IdRef(a)));
        emit(ctx, out, Op::ExtInst, ty, ops)
    };
    let part = |ctx: &mut Ctx, out: &mut Vec<Instruction>, ty: Word, v: Word, j: u32| {
        if k == 1 {
            return v;
        }
        emit(
            ctx,
            out,
            Op::CompositeExtract,
            ty,
            vec![Operand::IdRef(v), Operand::LiteralBit32(j)],
        )
    };
    let binary = |ctx: &mut Ctx, out: &mut Vec<Instruction>, op: Op, ty: Word, x: Word, y: Word| {
        emit(ctx, out, op, ty, vec![Operand::IdRef(x), Operand::IdRef(y)])
    };
    let half = float_const(ctx, 0.5);
    let fone = float_const(ctx, 1.0);
    let ftwo = float_const(ctx, 2.0);
    let fminus = float_const(ctx, -2.0);
    let one = ctx.const_u32(1);
    let spatial = k - arrayed as u32;
    // Per dimension: the two texels, whether each is inside the image,
    // and the weights of the lower and the upper one.
    struct Axis {
        texel: [Word; 2],
        inside: [Word; 2],
        weight: [Word; 2],
    }
    let mut axes = Vec::new();
    for j in 0..spatial {
        let s = part(ctx, out, f32t, coord, j);
        let n = part(ctx, out, u32t, size, j);
        let w = emit(ctx, out, Op::ConvertUToF, f32t, vec![Operand::IdRef(n)]);
        // The unnormalized coordinate.
        let mut u = s;
        if normalized != Cond::Static(false) {
            let scaled = binary(ctx, out, Op::FMul, f32t, s, w);
            u = pick(ctx, out, f32t, normalized, scaled, u);
        }
        if repeat != Cond::Static(false) {
            let fl = ext(ctx, out, f32t, 8, &[s]); // Floor
            let frac = binary(ctx, out, Op::FSub, f32t, s, fl);
            let scaled = binary(ctx, out, Op::FMul, f32t, frac, w);
            u = pick(ctx, out, f32t, repeat, scaled, u);
        }
        if mirror != Cond::Static(false) {
            let halved = binary(ctx, out, Op::FMul, f32t, s, half);
            let r = ext(ctx, out, f32t, 2, &[halved]); // RoundEven
            let even = binary(ctx, out, Op::FMul, f32t, r, ftwo);
            let d = binary(ctx, out, Op::FSub, f32t, s, even);
            let d = ext(ctx, out, f32t, 4, &[d]); // FAbs
            let scaled = binary(ctx, out, Op::FMul, f32t, d, w);
            u = pick(ctx, out, f32t, mirror, scaled, u);
        }
        let t = binary(ctx, out, Op::FSub, f32t, u, half);
        let lower = ext(ctx, out, f32t, 8, &[t]); // Floor
        let a = binary(ctx, out, Op::FSub, f32t, t, lower);
        let a_low = binary(ctx, out, Op::FSub, f32t, fone, a);
        // Far outside, any texels outside will do: the clamp keeps the
        // conversion to an integer defined.
        let lower = ext(ctx, out, f32t, 43, &[lower, fminus, w]); // FClamp
        let mut i0 = emit(ctx, out, Op::ConvertFToS, u32t, vec![Operand::IdRef(lower)]);
        let mut i1 = binary(ctx, out, Op::IAdd, u32t, i0, one);
        let last = binary(ctx, out, Op::ISub, u32t, n, one);
        if repeat != Cond::Static(false) {
            // The lower texel wraps from -1 to the last, the upper one
            // from the size to 0.
            let below = binary(ctx, out, Op::SLessThan, boolt, i0, zero);
            let wrapped = binary(ctx, out, Op::IAdd, u32t, i0, n);
            let c = and(ctx, out, repeat, Cond::Dynamic(below));
            i0 = pick(ctx, out, u32t, c, wrapped, i0);
            let beyond = binary(ctx, out, Op::SGreaterThan, boolt, i1, last);
            let wrapped = binary(ctx, out, Op::ISub, u32t, i1, n);
            let c = and(ctx, out, repeat, Cond::Dynamic(beyond));
            i1 = pick(ctx, out, u32t, c, wrapped, i1);
        }
        let mut texel = [0; 2];
        let mut inside = [0; 2];
        for (e, i) in [i0, i1].into_iter().enumerate() {
            texel[e] = ext(ctx, out, u32t, 45, &[i, zero, last]); // SClamp
            // Inside exactly where clamping changed nothing.
            inside[e] = binary(ctx, out, Op::IEqual, boolt, texel[e], i);
        }
        axes.push(Axis {
            texel,
            inside,
            weight: [a_low, a],
        });
    }
    // The layer: the nearest one, clamped.
    let layer = arrayed.then(|| {
        let l = part(ctx, out, f32t, coord, k - 1);
        let r = ext(ctx, out, f32t, 2, &[l]); // RoundEven
        let n = part(ctx, out, u32t, size, k - 1);
        let last = binary(ctx, out, Op::ISub, u32t, n, one);
        let flast = emit(ctx, out, Op::ConvertUToF, f32t, vec![Operand::IdRef(last)]);
        let fzero = float_const(ctx, 0.0);
        let r = ext(ctx, out, f32t, 43, &[r, fzero, flast]); // FClamp
        emit(ctx, out, Op::ConvertFToU, u32t, vec![Operand::IdRef(r)])
    });
    let zero4 = {
        let fzero = float_const(ctx, 0.0);
        let r = ctx.fresh();
        ctx.module.types_global_values.push(Instruction::new(
            Op::ConstantComposite,
            Some(v4),
            Some(r),
            vec![Operand::IdRef(fzero); 4],
        ));
        r
    };
    let splat4 = |ctx: &mut Ctx, out: &mut Vec<Instruction>, c: Word| {
        emit(
            ctx,
            out,
            Op::CompositeConstruct,
            b4,
            vec![Operand::IdRef(c); 4],
        )
    };
    let mut sum = zero4;
    for corner in 0..(1u32 << spatial) {
        let side = |j: usize| ((corner >> j) & 1) as usize;
        let mut comps: Vec<Operand> = axes
            .iter()
            .enumerate()
            .map(|(j, a)| Operand::IdRef(a.texel[side(j)]))
            .collect();
        if let Some(l) = layer {
            comps.push(Operand::IdRef(l));
        }
        let at = if comps.len() == 1 {
            match comps[0] {
                Operand::IdRef(x) => x,
                _ => unreachable!("texel coordinates are ids"),
            }
        } else {
            emit(ctx, out, Op::CompositeConstruct, uvec, comps)
        };
        let mut texel = emit(
            ctx,
            out,
            Op::ImageFetch,
            v4,
            vec![
                Operand::IdRef(image),
                Operand::IdRef(at),
                Operand::ImageOperands(ImageOperands::LOD),
                Operand::IdRef(zero),
            ],
        );
        if let Some(bits) = packed {
            texel = unpack_texel(ctx, out, bits, texel);
        }
        if border != Cond::Static(false) {
            let mut inside = axes[0].inside[side(0)];
            for (j, a) in axes.iter().enumerate().skip(1) {
                inside = binary(ctx, out, Op::LogicalAnd, boolt, inside, a.inside[side(j)]);
            }
            let keep = match border {
                Cond::Dynamic(b) => {
                    let edge = emit(ctx, out, Op::LogicalNot, boolt, vec![Operand::IdRef(b)]);
                    binary(ctx, out, Op::LogicalOr, boolt, inside, edge)
                }
                _ => inside,
            };
            let keep4 = splat4(ctx, out, keep);
            texel = emit(
                ctx,
                out,
                Op::Select,
                v4,
                vec![
                    Operand::IdRef(keep4),
                    Operand::IdRef(texel),
                    Operand::IdRef(zero4),
                ],
            );
        }
        let mut w = axes[0].weight[side(0)];
        for (j, a) in axes.iter().enumerate().skip(1) {
            w = binary(ctx, out, Op::FMul, f32t, w, a.weight[side(j)]);
        }
        let scaled = binary(ctx, out, Op::VectorTimesScalar, v4, texel, w);
        sum = binary(ctx, out, Op::FAdd, v4, sum, scaled);
    }
    match wanted {
        Cond::Dynamic(c) => {
            let c4 = splat4(ctx, out, c);
            emit(
                ctx,
                out,
                Op::Select,
                v4,
                vec![
                    Operand::IdRef(c4),
                    Operand::IdRef(sum),
                    Operand::IdRef(sample),
                ],
            )
        }
        _ => sum,
    }
}

/// A float coordinate as Vulkan's normalized samplers take it: texel
/// centres for unnormalized nearest sampling (so that exact integers do not
/// round down when divided by the size and multiplied back), divided by
/// the size when unnormalized, and for REPEAT wrapped into [0, 1) the way
/// OpenCL computes it (a fraction that rounds to 1 wraps to 0). The array
/// index, the last component of arrays, is left alone. `direct`: the
/// sampler is the twin that takes unnormalized coordinates itself.
#[allow(clippy::too_many_arguments)]
fn float_coord(
    ctx: &mut Ctx,
    out: &mut Vec<Instruction>,
    coord: Word,
    fsize: Word,
    k: u32,
    arrayed: bool,
    info: SamplerInfo,
    direct: bool,
) -> Result<Word, String> {
    let u32t = ctx.uint(32);
    let f32t = ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(32)]);
    let boolt = ctx.ty(Op::TypeBool, vec![]);
    let fvec = vec_or_scalar(ctx, f32t, k);
    let bvec = vec_or_scalar(ctx, boolt, k);
    let zero = ctx.const_u32(0);
    let (mut nearest_unnorm, mut unnorm, repeat) = match info {
        SamplerInfo::Const {
            normalized,
            linear,
            repeat,
            ..
        } => (
            Cond::Static(!normalized && !linear),
            Cond::Static(!normalized),
            Cond::Static(repeat),
        ),
        SamplerInfo::Spec(spec) => {
            let flags = info_word(ctx, spec);
            let mut bit = |ctx: &mut Ctx, mask: u32, set: bool| {
                let mask = ctx.const_u32(mask);
                let and = emit(
                    ctx,
                    out,
                    Op::BitwiseAnd,
                    u32t,
                    vec![Operand::IdRef(flags), Operand::IdRef(mask)],
                );
                let op = if set { Op::INotEqual } else { Op::IEqual };
                emit(
                    ctx,
                    out,
                    op,
                    boolt,
                    vec![Operand::IdRef(and), Operand::IdRef(zero)],
                )
            };
            let unnorm = bit(ctx, SAMPLER_NORMALIZED, false);
            let nearest = bit(ctx, SAMPLER_LINEAR, false);
            let repeat = bit(ctx, SAMPLER_REPEAT, true);
            let both = emit(
                ctx,
                out,
                Op::LogicalAnd,
                boolt,
                vec![Operand::IdRef(unnorm), Operand::IdRef(nearest)],
            );
            (
                Cond::Dynamic(both),
                Cond::Dynamic(unnorm),
                Cond::Dynamic(repeat),
            )
        }
    };
    if direct {
        // The sampler itself takes unnormalized coordinates.
        (nearest_unnorm, unnorm) = (Cond::Static(false), Cond::Static(false));
    }
    // `a` where `cond` holds, else `b`.
    let choose =
        |ctx: &mut Ctx, out: &mut Vec<Instruction>, cond: Cond, a: Word, b: Word| match cond {
            Cond::Static(true) => a,
            Cond::Static(false) => b,
            Cond::Dynamic(c) => {
                let c = if k == 1 {
                    c
                } else {
                    emit(
                        ctx,
                        out,
                        Op::CompositeConstruct,
                        bvec,
                        (0..k).map(|_| Operand::IdRef(c)).collect(),
                    )
                };
                emit(
                    ctx,
                    out,
                    Op::Select,
                    fvec,
                    vec![Operand::IdRef(c), Operand::IdRef(a), Operand::IdRef(b)],
                )
            }
        };
    // `v` with the array index of `orig`.
    let keep_layer = |ctx: &mut Ctx, out: &mut Vec<Instruction>, v: Word, orig: Word| {
        if !arrayed {
            return v;
        }
        let layer = emit(
            ctx,
            out,
            Op::CompositeExtract,
            f32t,
            vec![Operand::IdRef(orig), Operand::LiteralBit32(k - 1)],
        );
        emit(
            ctx,
            out,
            Op::CompositeInsert,
            fvec,
            vec![
                Operand::IdRef(layer),
                Operand::IdRef(v),
                Operand::LiteralBit32(k - 1),
            ],
        )
    };
    let glsl = ctx.ext_import_or_add("GLSL.std.450");
    let floor = |ctx: &mut Ctx, out: &mut Vec<Instruction>, v: Word| {
        // GLSL.std.450 Floor.
        emit(
            ctx,
            out,
            Op::ExtInst,
            fvec,
            vec![
                Operand::IdRef(glsl),
                Operand::LiteralExtInstInteger(8),
                Operand::IdRef(v),
            ],
        )
    };
    let mut c = coord;
    if nearest_unnorm != Cond::Static(false) {
        let f = floor(ctx, out, c);
        let half = coord_const(ctx, k, arrayed, 0.5, 0.0);
        let centre = emit(
            ctx,
            out,
            Op::FAdd,
            fvec,
            vec![Operand::IdRef(f), Operand::IdRef(half)],
        );
        let centre = keep_layer(ctx, out, centre, c);
        c = choose(ctx, out, nearest_unnorm, centre, c);
    }
    if unnorm != Cond::Static(false) {
        let d = emit(
            ctx,
            out,
            Op::FDiv,
            fvec,
            vec![Operand::IdRef(c), Operand::IdRef(fsize)],
        );
        c = choose(ctx, out, unnorm, d, c);
    }
    if repeat != Cond::Static(false) {
        let f = floor(ctx, out, c);
        let frac = emit(
            ctx,
            out,
            Op::FSub,
            fvec,
            vec![Operand::IdRef(c), Operand::IdRef(f)],
        );
        let ones = coord_const(ctx, k, false, 1.0, 1.0);
        let zeros = coord_const(ctx, k, false, 0.0, 0.0);
        let wraps = emit(
            ctx,
            out,
            Op::FOrdGreaterThanEqual,
            bvec,
            vec![Operand::IdRef(frac), Operand::IdRef(ones)],
        );
        let frac = emit(
            ctx,
            out,
            Op::Select,
            fvec,
            vec![
                Operand::IdRef(wraps),
                Operand::IdRef(zeros),
                Operand::IdRef(frac),
            ],
        );
        let frac = keep_layer(ctx, out, frac, c);
        c = choose(ctx, out, repeat, frac, c);
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::spirv::common::ctx::assemble;
    use crate::compiler::spirv::input::reflect::{ArgKind, KernelArg, KernelInfo};
    use crate::compiler::spirv::p3_interface::interface::Slot;
    use crate::compiler::spirv::p5_vulkan::finish::DeviceCaps;
    use rspirv::binary::Assemble;

    /// A kernel as llvm-spirv writes one: `k(read_only image2d_t src,
    /// write_only image2d_t dst, sampler_t s, global uint *out)` sampling
    /// with its sampler and a literal one, at integer coordinates, reading
    /// without a sampler, writing, and querying the size and order.
    fn kernel(body: &str) -> Vec<u32> {
        assemble(&kernel_text(body)).module.assemble()
    }

    fn kernel_text(body: &str) -> String {
        format!(
            "
            OpCapability Addresses
            OpCapability Kernel
            OpCapability Int64
            OpCapability ImageBasic
            OpCapability LiteralSampler
            OpMemoryModel Physical64 OpenCL
            OpEntryPoint Kernel %k \"k\"
            %uint = OpTypeInt 32 0
            %float = OpTypeFloat 32
            %void = OpTypeVoid
            %v2uint = OpTypeVector %uint 2
            %v2float = OpTypeVector %float 2
            %v4float = OpTypeVector %float 4
            %v4uint = OpTypeVector %uint 4
            %ro = OpTypeImage %void 2D 0 0 0 0 Unknown ReadOnly
            %wo = OpTypeImage %void 2D 0 0 0 0 Unknown WriteOnly
            %smp = OpTypeSampler
            %si = OpTypeSampledImage %ro
            %gptr = OpTypePointer CrossWorkgroup %uint
            %fty = OpTypeFunction %void %ro %wo %smp %gptr
            %uint_0 = OpConstant %uint 0
            %uint_1 = OpConstant %uint 1
            %uint_4272 = OpConstant %uint 4272
            %float_0 = OpConstant %float 0
            %float_1 = OpConstant %float 1.5
            %coord = OpConstantComposite %v2uint %uint_1 %uint_0
            %fcoord = OpConstantComposite %v2float %float_1 %float_1
            %lit = OpConstantSampler %smp Clamp 0 Nearest
            %k = OpFunction %void None %fty
            %src = OpFunctionParameter %ro
            %dst = OpFunctionParameter %wo
            %s = OpFunctionParameter %smp
            %out = OpFunctionParameter %gptr
            %entry = OpLabel
            {body}
            OpReturn
            OpFunctionEnd
            "
        )
    }

    fn info() -> KernelInfo {
        let arg = |name: &str, kind, access| KernelArg {
            name: name.into(),
            kind,
            address: 0,
            access,
            type_name: String::new(),
            type_qual: 0,
        };
        use opencl_sys::{CL_KERNEL_ARG_ACCESS_READ_ONLY, CL_KERNEL_ARG_ACCESS_WRITE_ONLY};
        KernelInfo {
            name: "k".into(),
            args: vec![
                arg("src", ArgKind::Image, CL_KERNEL_ARG_ACCESS_READ_ONLY),
                arg("dst", ArgKind::Image, CL_KERNEL_ARG_ACCESS_WRITE_ONLY),
                arg("s", ArgKind::Sampler, 0),
                arg("out", ArgKind::Buffer, 0),
            ],
            reqd_work_group_size: None,
            reqd_sub_group_size: None,
            work_group_size_hint: None,
            vec_type_hint: None,
            local_bytes: 0,
            private_bytes: 0,
            block: false,
        }
    }

    const BODY: &str = "
        %a = OpSampledImage %si %src %s
        %r1 = OpImageSampleExplicitLod %v4float %a %fcoord Lod %float_0
        %b = OpSampledImage %si %src %lit
        %r2 = OpImageSampleExplicitLod %v4uint %b %coord Lod %float_0
        %r3 = OpImageRead %v4float %src %coord
        OpImageWrite %dst %coord %r1
        OpImageWrite %dst %coord %r2
        OpImageWrite %dst %coord %r3
        %q = OpImageQuerySizeLod %v2uint %src %uint_0
        %w = OpCompositeExtract %uint %q 0
        %o = OpImageQueryOrder %uint %src
        %o2 = OpIAdd %uint %o %uint_4272
        %sum = OpIAdd %uint %w %o2
        OpStore %out %sum Aligned 4
    ";

    #[test]
    fn depth_images_read_and_write_scalars() {
        let body = "
            %a = OpSampledImage %si %src %s
            %r1 = OpImageSampleExplicitLod %v4float %a %fcoord Lod %float_0
            %d1 = OpCompositeExtract %float %r1 0
            %d2 = OpImageRead %float %src %coord
            %sum = OpFAdd %float %d1 %d2
            OpImageWrite %dst %coord %sum
        ";
        let text = kernel_text(body).replace("2D 0 0 0 0", "2D 1 0 0 0");
        let words = assemble(&text).module.assemble();
        let caps = DeviceCaps {
            max_push_constants: 128,
            ..Default::default()
        };
        // The rewrite validates the module it returns: scalar texels
        // widened to Vulkan's four channels.
        let r = crate::compiler::spirv::rewrite_for_images(
            &words,
            &info(),
            &caps,
            Default::default(),
            &[ImageClass::Float, ImageClass::Float],
        )
        .unwrap();
        let module = rspirv::dr::load_words(&r.words).unwrap();
        let ops: Vec<Op> = module
            .functions
            .iter()
            .flat_map(|f| f.blocks.iter().flat_map(|b| &b.instructions))
            .map(|i| i.class.opcode)
            .collect();
        assert!(ops.contains(&Op::ImageFetch) && ops.contains(&Op::CompositeConstruct));
        assert!(
            module
                .types_global_values
                .iter()
                .filter(|i| i.class.opcode == Op::TypeImage)
                .all(|i| i.operands[2] == Operand::LiteralBit32(0))
        );
    }

    #[test]
    fn packed_16_bit_texels_are_unpacked_and_packed_in_the_kernel() {
        let body = "
            %a = OpSampledImage %si %src %s
            %r1 = OpImageSampleExplicitLod %v4float %a %fcoord Lod %float_0
            %r2 = OpImageRead %v4float %src %coord
            %sum = OpFAdd %v4float %r1 %r2
            OpImageWrite %dst %coord %sum
        ";
        let words = assemble(&kernel_text(body)).module.assemble();
        let caps = DeviceCaps {
            max_push_constants: 128,
            ..Default::default()
        };
        let count = |classes: &[ImageClass], op: Op| {
            let r = crate::compiler::spirv::rewrite_for_images(
                &words,
                &info(),
                &caps,
                Default::default(),
                classes,
            )
            .unwrap();
            let module = rspirv::dr::load_words(&r.words).unwrap();
            module
                .functions
                .iter()
                .flat_map(|f| f.blocks.iter().flat_map(|b| &b.instructions))
                .filter(|i| i.class.opcode == op)
                .count()
        };
        let plain = [ImageClass::Float, ImageClass::Float];
        let packed = [ImageClass::Unorm565, ImageClass::Unorm555];
        // Three channels shifted out of each texel read: the sampled one,
        // the fetched one and the four fetched for linear filtering; three
        // shifted into the written one.
        assert_eq!(count(&plain, Op::ShiftRightLogical), 0);
        assert_eq!(count(&packed, Op::ShiftRightLogical), 3 * 6);
        assert_eq!(count(&packed, Op::ShiftLeftLogical), 3);
    }

    #[test]
    fn images_and_samplers_become_descriptors() {
        let caps = DeviceCaps {
            max_push_constants: 128,
            ..Default::default()
        };
        for classes in [
            [ImageClass::Float, ImageClass::Float],
            [ImageClass::Int, ImageClass::Uint],
        ] {
            // The rewrite validates the module it returns.
            let r = crate::compiler::spirv::rewrite_for_images(
                &kernel(BODY),
                &info(),
                &caps,
                Default::default(),
                &classes,
            )
            .unwrap();
            // The parameters, the literal sampler, then the samplers'
            // twins for 1D and 2D images.
            assert_eq!(
                r.images.bindings,
                vec![
                    Binding::SampledImage,
                    Binding::StorageImage,
                    Binding::Sampler,
                    Binding::Sampler,
                    Binding::Sampler,
                    Binding::Sampler
                ]
            );
            assert_eq!(r.images.direct_samplers, vec![(4, 2), (5, 3)]);
            assert_eq!(
                r.images.literal_samplers,
                vec![LiteralSampler {
                    binding: 3,
                    normalized: false,
                    addressing: CL_ADDRESS_CLAMP,
                    filter: CL_FILTER_NEAREST,
                }]
            );
            assert!(
                r.images
                    .caps
                    .contains(&Capability::StorageImageWriteWithoutFormat)
            );
            assert!(
                !r.images
                    .caps
                    .contains(&Capability::StorageImageReadWithoutFormat)
            );
            assert!(matches!(r.push.args[0], Slot::Image { binding: 0, .. }));
            assert!(matches!(r.push.args[1], Slot::Image { binding: 1, .. }));
            assert!(matches!(r.push.args[2], Slot::Sampler { binding: 2, .. }));
        }
    }

    #[test]
    fn read_write_images_read_storage_images() {
        let caps = DeviceCaps {
            max_push_constants: 128,
            ..Default::default()
        };
        // dst as a read_write image: read, then written back.
        let words = {
            let src = "
            OpCapability Addresses
            OpCapability Kernel
            OpCapability Int64
            OpCapability ImageBasic
            OpCapability ImageReadWrite
            OpMemoryModel Physical64 OpenCL
            OpEntryPoint Kernel %k \"k\"
            %uint = OpTypeInt 32 0
            %void = OpTypeVoid
            %v4uint = OpTypeVector %uint 4
            %rw = OpTypeImage %void 3D 0 0 0 0 Unknown ReadWrite
            %fty = OpTypeFunction %void %rw
            %uint_0 = OpConstant %uint 0
            %coord = OpConstantComposite %v4uint %uint_0 %uint_0 %uint_0 %uint_0
            %k = OpFunction %void None %fty
            %img = OpFunctionParameter %rw
            %entry = OpLabel
            %r = OpImageRead %v4uint %img %coord
            OpImageWrite %img %coord %r
            OpReturn
            OpFunctionEnd
            ";
            assemble(src).module.assemble()
        };
        let mut info = info();
        info.args.truncate(1);
        info.args[0].access = opencl_sys::CL_KERNEL_ARG_ACCESS_READ_WRITE;
        let r = crate::compiler::spirv::rewrite_for_images(
            &words,
            &info,
            &caps,
            Default::default(),
            &[ImageClass::Int],
        )
        .unwrap();
        assert_eq!(r.images.bindings, vec![Binding::StorageImage]);
        assert!(
            r.images
                .caps
                .contains(&Capability::StorageImageReadWithoutFormat)
        );
    }

    #[test]
    fn writes_to_read_only_images_are_refused() {
        let caps = DeviceCaps {
            max_push_constants: 128,
            ..Default::default()
        };
        let body = "
            %r = OpImageRead %v4float %src %coord
            OpImageWrite %src %coord %r
        ";
        let e = crate::compiler::spirv::rewrite_for_images(
            &kernel(body),
            &info(),
            &caps,
            Default::default(),
            &[],
        )
        .err()
        .unwrap();
        assert!(e.contains("read-only"), "{e}");
    }
}
