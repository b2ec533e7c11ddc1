//! A kernel launch: an NDRange plan and everything one queue's device
//! needs to run a kernel over it.
//!
//! [`NdRange`] takes the sizes an enqueue passed (after the
//! specification's checks), chooses a local size where none was given and
//! splits the range into [`Region`]s of equally sized work-groups, each
//! into dispatches Vulkan can cover. [`Launch::new`] then takes a snapshot
//! of the kernel's arguments: it compiles the kernel for them, fills the
//! push constants and the argument block, allocates the printf and scratch
//! memory, binds images and samplers and creates the pipelines; everything
//! that can fail with an OpenCL error fails there, in the order the
//! enqueue always reported them. What it builds is recorded by
//! [`Launch::record`], which leaves the launch unchanged, and holds every
//! object the device work refers to until the launch is dropped.

use std::sync::Arc;

use ash::vk;
use opencl_sys::*;

use crate::compiler::spirv::p3_interface::interface::{
    ENQUEUED_LOCAL_SIZE, GLOBAL_OFFSET, GLOBAL_SIZE, GROUP_OFFSET, MODULE_DATA, PRINTF_BUFFER,
    SCRATCH, SCRATCH_BYTES, SCRATCH_PRIVATE_BYTES, Slot, WORK_DIM, enqueue_list_at,
};
use crate::compiler::spirv::p3_interface::relocate::{LOCAL_STRIDE_SPEC_ID, Scratch};
use crate::compiler::spirv::p5_vulkan::images::{
    NO_ALPHA, SAMPLER_BORDER, SAMPLER_LINEAR, SAMPLER_MIRROR, SAMPLER_NORMALIZED, SAMPLER_REPEAT,
    SWAP_RED_BLUE,
};
use crate::core::device::Device;
use crate::core::error::{ClError, ClResult, err};
use crate::core::event::Event;
use crate::core::image::{Image, KernelView};
use crate::core::kernel::{ArgValue, Compiled, Kernel, image_class};
use crate::core::memory::{Access, Buffer, Staging, Use, used};
use crate::core::object::Handle;
use crate::core::queue::{Ordering, Queue, Recorder, Work};
use crate::core::sampler::Sampler;
use crate::core::svm::SvmAlloc;
use crate::vk::memory::{BufferUse, MIN_ALIGNMENT};
use crate::vk::pipeline::{ComputePipeline, DescriptorSet};

/// Work-group sizes and the local size a kernel's NDRange runs with: the
/// application's sizes padded to three dimensions (global sizes and local
/// sizes with 1, offsets with 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NdRange {
    pub work_dim: u32,
    pub offset: [usize; 3],
    pub global: [usize; 3],
    pub local: [usize; 3],
}

impl NdRange {
    /// The NDRange of an enqueue of `kernel` on `device` whose sizes passed
    /// the specification's checks: `global` has one entry per dimension,
    /// `offset` and `local` as many or none. Without a local size,
    /// [`choose_local`] picks one. Fails with CL_INVALID_WORK_GROUP_SIZE
    /// where the global size is not a multiple of the local size and the
    /// kernel may not have partial work-groups.
    pub fn new(
        kernel: &Kernel,
        device: &Device,
        offset: &[usize],
        global: &[usize],
        local: &[usize],
    ) -> ClResult<NdRange> {
        let mut range = NdRange::with_local(offset, global, [1; 3]);
        range.local = if local.is_empty() {
            choose_local(
                range.global,
                device.max_work_item_sizes(),
                kernel.info.reqd_work_group_size,
                kernel.max_group_size(device),
            )
        } else {
            let mut l = [1usize; 3];
            l[..local.len()].copy_from_slice(local);
            l
        };
        // Partial work-groups need OpenCL 2.0+ and no -cl-uniform-work-group-size.
        if !kernel.non_uniform_groups && !range.uniform() {
            return err(CL_INVALID_WORK_GROUP_SIZE);
        }
        Ok(range)
    }

    /// The NDRange of `global` (one entry per dimension) at `offset` (as
    /// many entries, or none) in work-groups of `local`.
    pub fn with_local(offset: &[usize], global: &[usize], local: [usize; 3]) -> NdRange {
        let mut range = NdRange {
            work_dim: global.len() as u32,
            offset: [0; 3],
            global: [1; 3],
            local,
        };
        range.global[..global.len()].copy_from_slice(global);
        range.offset[..offset.len()].copy_from_slice(offset);
        range
    }

    /// Whether every work-group has the local size.
    pub fn uniform(&self) -> bool {
        (0..3).all(|i| self.global[i] % self.local[i] == 0)
    }

    /// An NDRange of one work-item, which may have a form of the kernel
    /// of its own (see `Kernel::compiled`).
    pub fn single_work_item(&self) -> bool {
        self.global == [1, 1, 1]
    }

    /// Whether every global id fits the 32 bits Vulkan's ids have.
    pub fn fits_32_bit_ids(&self) -> bool {
        (0..3).all(|i| self.offset[i] as u64 + self.global[i] as u64 <= u32::MAX as u64)
    }

    /// Whether there is no work at all (a global size of 0).
    pub fn is_empty(&self) -> bool {
        self.global.contains(&0)
    }

    pub fn work_items(&self) -> u64 {
        self.global.iter().map(|&g| g as u64).product()
    }

    /// Work-groups, partial ones included.
    pub fn work_groups(&self) -> u64 {
        (0..3)
            .map(|i| self.global[i].div_ceil(self.local[i]) as u64)
            .product()
    }

    /// The blocks of equally sized work-groups.
    pub fn regions(&self) -> Vec<Region> {
        Region::split(self.global, self.local)
    }

    /// The push constants every dispatch shares, in a block of `size`
    /// bytes: the offset, global size, enqueued local size and dimensions.
    fn push_constants(&self, size: u32) -> Vec<u8> {
        let mut push = vec![0u8; size as usize];
        for i in 0..3 {
            let at = 4 * i as u32;
            put(
                &mut push,
                GLOBAL_OFFSET + at,
                &(self.offset[i] as u32).to_ne_bytes(),
            );
            put(
                &mut push,
                GLOBAL_SIZE + at,
                &(self.global[i] as u32).to_ne_bytes(),
            );
            put(
                &mut push,
                ENQUEUED_LOCAL_SIZE + at,
                &(self.local[i] as u32).to_ne_bytes(),
            );
        }
        put(&mut push, WORK_DIM, &self.work_dim.to_ne_bytes());
        push
    }
}

/// A local size for an NDRange the application left to vkcl: the
/// kernel's required size if it has one, else per dimension the largest
/// divisor of the global size that keeps the work-group within the
/// device's `max_sizes` per dimension, `most` items (the kernel's largest
/// work-group) and 256 items (a size that suits most GPUs and lavapipe
/// alike).
pub fn choose_local(
    global: [usize; 3],
    max_sizes: [usize; 3],
    reqd: Option<[u32; 3]>,
    most: usize,
) -> [usize; 3] {
    if let Some(r) = reqd {
        return r.map(|v| v as usize);
    }
    let mut budget = most.min(256);
    let mut local = [1usize; 3];
    for dim in 0..3 {
        let cap = budget.min(max_sizes[dim]).max(1);
        let l = (1..=cap.min(global[dim]))
            .rev()
            .find(|l| global[dim] % l == 0)
            .unwrap_or(1);
        local[dim] = l;
        budget /= l;
    }
    local
}

/// A block of an NDRange's work-groups that share one size: the uniform
/// groups, or in a dimension where the global size is not a multiple of
/// the local size, the one partial group at its end (up to 8 blocks in
/// 3-D). Group ids are in units of the enqueued work-group size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub first: [u32; 3],
    pub groups: [u32; 3],
    pub local: [u32; 3],
}

impl Region {
    /// The blocks of an NDRange of `global` work-items in groups of `local`.
    pub fn split(global: [usize; 3], local: [usize; 3]) -> Vec<Region> {
        // Per dimension: the uniform groups and the partial one, each as
        // (first group, groups, local size) where there are any.
        let parts = |i: usize| {
            let (full, rest) = (global[i] / local[i], global[i] % local[i]);
            [
                (full > 0).then_some((0, full as u32, local[i] as u32)),
                (rest > 0).then_some((full as u32, 1, rest as u32)),
            ]
        };
        let (xs, ys, zs) = (parts(0), parts(1), parts(2));
        let mut out = Vec::with_capacity(1);
        for x in xs.iter().flatten() {
            for y in ys.iter().flatten() {
                for z in zs.iter().flatten() {
                    out.push(Region {
                        first: [x.0, y.0, z.0],
                        groups: [x.1, y.1, z.1],
                        local: [x.2, y.2, z.2],
                    });
                }
            }
        }
        out
    }

    /// The region as dispatches of at most `max` groups per dimension:
    /// (first group id, group counts) of each.
    pub fn chunks(&self, max: [u32; 3]) -> Vec<([u32; 3], [u32; 3])> {
        let steps = |i: usize| {
            let step = max[i].max(1);
            (0..self.groups[i])
                .step_by(step as usize)
                .map(move |s| (self.first[i] + s, step.min(self.groups[i] - s)))
        };
        let mut out = Vec::with_capacity(1);
        for x in steps(0) {
            for y in steps(1) {
                for z in steps(2) {
                    out.push(([x.0, y.0, z.0], [x.1, y.1, z.1]));
                }
            }
        }
        out
    }
}

/// Writes `bytes` into a push-constant block or argument block at `at`.
fn put(block: &mut [u8], at: u32, bytes: &[u8]) {
    block[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
}

/// One Vulkan dispatch of a launch.
struct Dispatch {
    pipeline: Arc<ComputePipeline>,
    /// The launch's push constants with this dispatch's first group id.
    push: Vec<u8>,
    groups: [u32; 3],
}

/// An image whose texels live in buffer rows: the kernel sees a shadow
/// image, filled from the buffer before the dispatches and, where the
/// kernel may write it, copied back after them.
struct Shadow {
    buffer: vk::Buffer,
    image: vk::Image,
    copy: vk::BufferImageCopy,
    written: bool,
}

/// How the dispatches get their images and samplers (descriptor set 0).
enum Descriptors {
    /// The kernel has none.
    None,
    /// Pushed into the command buffer before each dispatch, where the
    /// device has VK_KHR_push_descriptor and the kernel at most 32
    /// bindings: one handle per binding in each array.
    Pushed {
        views: Vec<vk::ImageView>,
        texels: Vec<vk::BufferView>,
        samplers: Vec<vk::Sampler>,
    },
    /// A descriptor set of the launch's own, written once.
    Set(DescriptorSet),
}

/// What a kernel's argument values bind, as [`Launch::new`] resolves
/// them: the objects behind them, descriptor handles by binding, and
/// specialization constants (`__local` sizes, image and sampler words).
struct Bound {
    buffers: Vec<Arc<Handle<Buffer>>>,
    /// What the launch does with its buffers (contexts of several devices).
    uses: Vec<Use>,
    svm: Vec<Arc<SvmAlloc>>,
    images: Vec<Arc<Handle<Image>>>,
    samplers: Vec<Arc<Handle<Sampler>>>,
    /// Descriptor set 0 by binding.
    views: Vec<vk::ImageView>,
    texels: Vec<vk::BufferView>,
    sampler_handles: Vec<vk::Sampler>,
    /// Each sampler's twin for 1D and 2D images, by the sampler's binding.
    direct: Vec<vk::Sampler>,
    shadows: Vec<Shadow>,
    /// (SpecId, value) pairs.
    specs: Vec<(u32, u32)>,
    /// Bytes of `__local` memory the arguments ask for.
    local_bytes: u64,
}

/// A kernel launch on one queue's device, ready to record: the NDRange
/// plan, the compiled kernel with its pipelines per region, the push
/// constants of each dispatch, the bindings of images and samplers, and
/// the memory and objects the dispatches use.
///
/// Everything it records refers only to what it holds, so
/// [`Launch::record`] may record it more than once while it lives;
/// recordings share its argument block, scratch and printf memory, so
/// they must not run at the same time. A launch on several devices makes
/// one `Launch` per device from the same [`NdRange`].
pub struct Launch {
    /// The kernel's name, for diagnostics.
    name: Arc<str>,
    range: NdRange,
    shadows: Vec<Shadow>,
    dispatches: Vec<Dispatch>,
    /// Dropped before `compiled`, whose literal samplers it may point to.
    descriptors: Descriptors,
    /// The printf buffer and its size, read once the device work is done.
    printf: Option<(Arc<Staging>, usize)>,
    /// Where the kernel enqueues on the device: its launch list.
    enqueue: Option<Enqueue>,
    compiled: Arc<Compiled>,
    // What the dispatches read and write, kept while the device uses it:
    // the argument block, the scratch memory and the arguments' objects.
    _arg_block: Option<Arc<Staging>>,
    _scratch: Option<Arc<Staging>>,
    _buffers: Vec<Arc<Handle<Buffer>>>,
    uses: Vec<Use>,
    _svm: Vec<Arc<SvmAlloc>>,
    _images: Vec<Arc<Handle<Image>>>,
    _samplers: Vec<Arc<Handle<Sampler>>>,
}

/// A launch's part in device-side enqueue.
struct Enqueue {
    list: Arc<crate::core::enqueue::LaunchList>,
    /// The command's own kernel (not one it enqueued): its host step runs
    /// the tree.
    top: Option<Top>,
}

/// What running the tree needs besides the launch itself (whose
/// `compiled.enqueues` names the block kernels).
struct Top {
    queue: Arc<Handle<Queue>>,
    program: Arc<Handle<crate::core::program::Program>>,
}

impl Launch {
    /// [`Launch::new_in`] for a command's own kernel.
    pub fn new(queue: &Arc<Handle<Queue>>, kernel: &Kernel, range: NdRange) -> ClResult<Launch> {
        Self::new_in(queue, kernel, range, None)
    }

    /// Builds the launch of `kernel` over `range` on `queue`'s device with
    /// the arguments set now. Fails with CL_INVALID_OPERATION (and a
    /// warning) where the kernel cannot be compiled for them,
    /// CL_INVALID_KERNEL_ARGS where an argument's object was released or
    /// changed meanwhile, CL_OUT_OF_RESOURCES where the range, the
    /// `__local` memory or the scratch memory pass what vkcl or the device
    /// supports, or with the error of an allocation.
    /// `within`: for a kernel enqueued on the device, the launch list of
    /// its command and the number of its record.
    pub fn new_in(
        queue: &Arc<Handle<Queue>>,
        kernel: &Kernel,
        range: NdRange,
        within: Option<(Arc<crate::core::enqueue::LaunchList>, u32)>,
    ) -> ClResult<Launch> {
        let d = &queue.device;
        // A work-group longer in a dimension than Vulkan allows (which
        // only kernels enqueued on the device may ask for) runs flat, and
        // so does one that would leave a CPU device's vectors idle.
        let local = range.local.map(|l| u32::try_from(l).unwrap_or(u32::MAX));
        let flat = !d.fits_work_group(local) || d.narrow_groups_run_flat(local);
        let compiled = kernel
            .compiled(d, &queue.vk, range.single_work_item(), flat)
            .map_err(|_| ClError(CL_INVALID_OPERATION))?;
        if !range.fits_32_bit_ids() {
            log::warn!(target: "vkcl::kernel", "an NDRange of {:?} (offset {:?}) reaches past 32-bit global ids", range.global, range.offset);
            return err(CL_OUT_OF_RESOURCES);
        }
        // The push constants: work-item data, then the arguments as set
        // now, or all arguments in an argument block.
        let mut push = range.push_constants(compiled.push.size);
        let mut block = vec![0u8; compiled.push.block.unwrap_or(0) as usize];
        let mut bound = bind_args(queue, kernel, &compiled, |at, bytes| {
            let args_to = if compiled.push.block.is_some() {
                &mut block
            } else {
                &mut push
            };
            put(args_to, at, bytes)
        })?;
        // `__local` arguments and the kernel's own `__local` variables
        // share the device's local memory.
        if bound.local_bytes.saturating_add(kernel.info.local_bytes) > d.local_mem_size() {
            return err(CL_OUT_OF_RESOURCES);
        }
        let arg_block = match compiled.push.block {
            Some(_) => {
                // Written now, read by the device after submission.
                let (staging, address) = queue.arg_blocks.put(&queue.vk, &block)?;
                put(&mut push, compiled.push.arg_block, &address.to_ne_bytes());
                Some(staging)
            }
            None => None,
        };
        if let Some(data) = &compiled.data {
            put(&mut push, MODULE_DATA, &data.kernel.address.to_ne_bytes());
        }
        // printf: a buffer the dispatches append records to, formatted on
        // the host once the device work is done.
        let printf = if compiled.printf.is_empty() {
            None
        } else {
            let size = crate::core::printf::buffer_size();
            let buffer = Staging::new(&queue.vk, size, BufferUse::Readback)?;
            buffer.buffer().write(0, &crate::core::printf::header(size));
            put(
                &mut push,
                PRINTF_BUFFER,
                &buffer.buffer().address.to_ne_bytes(),
            );
            Some((buffer, size))
        };
        // Device-side enqueue: the launch list, and the launch's number.
        let enqueue = match (&compiled.enqueues, within) {
            (None, _) => None,
            (Some(_), Some((list, n))) => Some((list, n, None)),
            (Some(_), None) => {
                let default = queue.context.default_device_queue(d);
                let size = crate::core::enqueue::record_bytes(
                    default.as_ref().and_then(|q| q.on_device),
                    range.work_items(),
                );
                let value = default
                    .as_ref()
                    .map_or(0, |q| Handle::as_raw::<u8>(q) as u64);
                let list = crate::core::enqueue::LaunchList::new(&queue.vk, size, value)?;
                let top = Top {
                    queue: queue.clone(),
                    program: kernel.program.clone(),
                };
                Some((list, 0, Some(top)))
            }
        };
        let enqueue = enqueue.map(|(list, n, top)| {
            let at = enqueue_list_at(compiled.data.is_some());
            put(&mut push, at, &list.address().to_ne_bytes());
            put(&mut push, at + 8, &u64::from(n).to_ne_bytes());
            Enqueue { list, top }
        });
        let local_stride = place_local_args(&compiled.scratch, &mut bound.specs)?;
        let scratch = match scratch_size(&range, &compiled.scratch, local_stride)? {
            Some((private, total)) => {
                let buffer = Staging::new(
                    &queue.vk,
                    (total + MIN_ALIGNMENT) as usize,
                    BufferUse::Device,
                )?;
                let address = buffer.buffer().address.next_multiple_of(MIN_ALIGNMENT);
                put(&mut push, SCRATCH, &address.to_ne_bytes());
                put(
                    &mut push,
                    SCRATCH_PRIVATE_BYTES,
                    &(private as u32).to_ne_bytes(),
                );
                put(&mut push, SCRATCH_BYTES, &(total as u32).to_ne_bytes());
                Some(buffer)
            }
            None => None,
        };
        for &(twin, of) in &compiled.images.direct_samplers {
            bound.sampler_handles[twin as usize] = bound.direct[of as usize];
        }
        let types = &compiled.module.bindings;
        let descriptors = if types.is_empty() {
            Descriptors::None
        } else if compiled.module.pushes_descriptors() {
            Descriptors::Pushed {
                views: bound.views,
                texels: bound.texels,
                samplers: bound.sampler_handles,
            }
        } else {
            let set = compiled.module.descriptor_set()?;
            set.write(types, &bound.views, &bound.texels, &bound.sampler_handles);
            Descriptors::Set(set)
        };
        let max_groups = d.info.props.limits.max_compute_work_group_count;
        let mut dispatches = Vec::new();
        for region in range.regions() {
            let pipeline = compiled.pipeline(region.local, bound.specs.clone())?;
            for (first, groups) in region.chunks(max_groups) {
                let mut push = push.clone();
                for (i, f) in first.iter().enumerate() {
                    put(&mut push, GROUP_OFFSET + 4 * i as u32, &f.to_ne_bytes());
                }
                dispatches.push(Dispatch {
                    pipeline: pipeline.clone(),
                    push,
                    groups,
                });
            }
        }
        Ok(Launch {
            name: kernel.label.clone(),
            range,
            shadows: bound.shadows,
            dispatches,
            descriptors,
            printf,
            enqueue,
            compiled,
            _arg_block: arg_block,
            _scratch: scratch,
            _buffers: bound.buffers,
            uses: bound.uses,
            _svm: bound.svm,
            _images: bound.images,
            _samplers: bound.samplers,
        })
    }

    /// The NDRange it runs.
    pub fn range(&self) -> &NdRange {
        &self.range
    }

    /// Records the launch: images kept in buffer rows copied in, the
    /// dispatches, and those images copied back where the kernel may
    /// have written them. The launch must outlive the recorded work.
    pub fn record(&self, r: &Recorder<'_>) -> ClResult<()> {
        for s in &self.shadows {
            r.copy_buffer_to_image(s.buffer, s.image, s.copy);
        }
        if !self.shadows.is_empty() {
            r.full_barrier();
        }
        let set = match &self.descriptors {
            Descriptors::Set(set) => Some(set.raw),
            _ => None,
        };
        for d in &self.dispatches {
            if let Descriptors::Pushed {
                views,
                texels,
                samplers,
            } = &self.descriptors
            {
                self.compiled.module.push_descriptors(
                    r.cb,
                    d.pipeline.layout(),
                    views,
                    texels,
                    samplers,
                );
            }
            r.dispatch(&d.pipeline, &d.push, d.groups, set);
        }
        if self.shadows.iter().any(|s| s.written) {
            r.full_barrier();
        }
        for s in self.shadows.iter().filter(|s| s.written) {
            r.copy_image_to_buffer(s.image, s.buffer, s.copy);
        }
        Ok(())
    }

    /// Formats what the kernel printed, once the device work is done.
    pub(crate) fn print(&self) -> ClResult<()> {
        if let Some((buffer, size)) = &self.printf {
            let size = *size;
            let mut bytes = vec![0u8; size];
            // SAFETY: `bytes` has room for the whole buffer.
            unsafe { buffer.buffer().read_to(0, bytes.as_mut_ptr().cast(), size) };
            crate::core::printf::print_records(&bytes, &self.compiled.printf);
            // Emptied for the next run of a launch kept in a command buffer.
            buffer.buffer().write(0, &crate::core::printf::header(size));
        }
        Ok(())
    }

    /// Enqueues the launch on `queue` (the queue it was built for) as a
    /// command of `command_type` waiting for `wait_list`; the command
    /// holds the launch until it completes, then prints what the kernel
    /// printed.
    pub fn enqueue(
        self,
        queue: &Arc<Handle<Queue>>,
        command_type: cl_command_type,
        wait_list: Vec<Arc<Handle<Event>>>,
    ) -> ClResult<Arc<Handle<Event>>> {
        let name = self.name.clone();
        let work = Arc::new(self).work();
        let event = queue.enqueue(command_type, wait_list, Ordering::Normal, work)?;
        let _ = event.label.set(name);
        Ok(event)
    }

    /// Whether a run has a host step: printing, or running what the
    /// kernel enqueued on the device.
    fn host_step(&self) -> bool {
        self.printf.is_some() || self.enqueue.as_ref().is_some_and(|e| e.top.is_some())
    }

    /// Runs the kernels the command's kernel enqueued on the device, and
    /// theirs, once its device work is done.
    fn run_enqueued(&self) -> ClResult<()> {
        match (&self.enqueue, &self.compiled.enqueues) {
            (
                Some(Enqueue {
                    list,
                    top: Some(top),
                }),
                Some(blocks),
            ) => crate::core::enqueue::run_tree(&top.queue, &top.program, blocks, list),
            _ => Ok(()),
        }
    }

    /// The device work of one run of the launch: recorded as it stands,
    /// then (with printf) printed. A launch kept in a command buffer makes
    /// this once per enqueue of the buffer; the runs share its memory, so
    /// they must not overlap (the command buffer orders them). With printf,
    /// the printing is a host step that later work waits for, as the
    /// printf buffer is emptied there for the next run.
    pub fn work(self: &Arc<Self>) -> Work {
        let (recorded, printed) = (self.clone(), self.clone());
        Work {
            record: Some(Box::new(move |r| recorded.record(r))),
            uses: self.uses.clone(),
            complete: self.host_step().then(|| -> crate::core::queue::CompleteFn {
                Box::new(move || {
                    printed.print()?;
                    printed.run_enqueued()
                })
            }),
            keep: vec![Box::new(self.clone())],
            host_access: self.host_step(),
        }
    }
}

/// Resolves the kernel's argument values as set now: writes buffer
/// addresses and plain bytes through `write` (offset, bytes), collects
/// `__local` sizes and image and sampler words as specialization
/// constants, and the views and samplers of descriptor set 0.
fn bind_args(
    queue: &Queue,
    kernel: &Kernel,
    compiled: &Compiled,
    mut write: impl FnMut(u32, &[u8]),
) -> ClResult<Bound> {
    let types = &compiled.module.bindings;
    let n = types.len();
    let mut b = Bound {
        buffers: Vec::new(),
        uses: Vec::new(),
        svm: Vec::new(),
        images: Vec::new(),
        samplers: Vec::new(),
        views: vec![vk::ImageView::null(); n],
        texels: vec![vk::BufferView::null(); n],
        sampler_handles: vec![vk::Sampler::null(); n],
        direct: vec![vk::Sampler::null(); n],
        shadows: Vec::new(),
        specs: Vec::new(),
        local_bytes: 0,
    };
    for (binding, s) in &compiled.literal_samplers {
        b.sampler_handles[*binding as usize] = s.normal.raw;
        b.direct[*binding as usize] = s.direct.raw;
    }
    let mut image_index = 0;
    let args = kernel.args();
    for (i, (slot, value)) in compiled.push.args.iter().zip(args.iter()).enumerate() {
        match (slot, value) {
            (Slot::Address { offset }, Some(ArgValue::Buffer(buffer))) => {
                let address = match buffer {
                    Some(weak) => {
                        // A buffer released since it was set is gone.
                        let buffer = weak.upgrade().ok_or(ClError(CL_INVALID_KERNEL_ARGS))?;
                        let address = buffer.storage_for(queue)?.address + buffer.offset as u64;
                        let writes = buffer.flags & CL_MEM_READ_ONLY == 0
                            && kernel.info.args.get(i).is_none_or(|a| {
                                a.address != CL_KERNEL_ARG_ADDRESS_CONSTANT
                                    && a.type_qual & CL_KERNEL_ARG_TYPE_CONST as cl_bitfield == 0
                            });
                        let access = if writes { Access::Write } else { Access::Read };
                        b.uses.extend(used(&buffer, access));
                        b.buffers.push(buffer);
                        address
                    }
                    None => 0,
                };
                write(*offset, &address.to_ne_bytes());
            }
            (Slot::Address { offset }, Some(ArgValue::Address(address))) => {
                // The allocation stays while the command runs.
                if let Some(a) = kernel.program.context.svm.find(*address as usize) {
                    b.svm.push(a);
                }
                write(*offset, &address.to_ne_bytes());
            }
            (Slot::Bytes { offset, .. }, Some(ArgValue::Bytes(bytes))) => write(*offset, bytes),
            (Slot::Local { spec_id, elem_size }, Some(ArgValue::Local(bytes))) => {
                b.local_bytes += *bytes as u64;
                b.specs
                    .push((*spec_id, bytes.div_ceil(*elem_size as usize) as u32));
            }
            (Slot::Image { binding, info }, Some(ArgValue::Image(w))) => {
                // An image released since it was set is gone.
                let image = w.upgrade().ok_or(ClError(CL_INVALID_KERNEL_ARGS))?;
                let backing = image.backing_on(queue)?;
                let read_only = kernel
                    .info
                    .args
                    .get(i)
                    .is_some_and(|a| a.access == CL_KERNEL_ARG_ACCESS_READ_ONLY);
                let access = if read_only {
                    Access::Read
                } else {
                    Access::Write
                };
                b.uses
                    .extend(crate::core::image::backing_used(&image, access));
                let class = image_class(&queue.device, &image.format);
                if compiled.classes.get(image_index) != Some(&class) {
                    // The argument changed while the kernel was compiled.
                    return err(CL_INVALID_KERNEL_ARGS);
                }
                image_index += 1;
                let f = image.format;
                let no_alpha = matches!(
                    f.image_channel_order,
                    CL_R | CL_RG | CL_RGB | CL_LUMINANCE | CL_DEPTH
                );
                let at = *binding as usize;
                use vk::DescriptorType as T;
                let sampled = matches!(types[at], T::SAMPLED_IMAGE | T::UNIFORM_TEXEL_BUFFER);
                let mut order = f.image_channel_order - CL_R;
                if no_alpha {
                    order |= NO_ALPHA;
                }
                if !sampled && backing.storage_swaps_red_blue() {
                    order |= SWAP_RED_BLUE;
                }
                b.specs.push((*info, order));
                b.specs
                    .push((*info + 1, f.image_channel_data_type - CL_SNORM_INT8));
                // The kernel's parameter type says which kind of
                // descriptor it takes; the image must be of that kind.
                let texel_binding =
                    matches!(types[at], T::UNIFORM_TEXEL_BUFFER | T::STORAGE_TEXEL_BUFFER);
                match backing.kernel_view(sampled) {
                    Some(KernelView::Image(v)) if !texel_binding => b.views[at] = v,
                    Some(KernelView::Texels(v)) if texel_binding => b.texels[at] = v,
                    _ => return err(CL_INVALID_KERNEL_ARGS),
                }
                if let Some((buffer, shadow, copy)) = image.shadow(queue)? {
                    b.shadows.push(Shadow {
                        buffer,
                        image: shadow,
                        copy,
                        written: !sampled,
                    });
                }
                b.images.push(image);
            }
            (Slot::Sampler { binding, info }, Some(ArgValue::Sampler(w))) => {
                let s = w.upgrade().ok_or(ClError(CL_INVALID_KERNEL_ARGS))?;
                let at = s
                    .context
                    .devices
                    .iter()
                    .position(|dev| Arc::ptr_eq(dev, &queue.device))
                    .ok_or(ClError(CL_INVALID_KERNEL_ARGS))?;
                b.sampler_handles[*binding as usize] = s.device_samplers[at].normal.raw;
                b.direct[*binding as usize] = s.device_samplers[at].direct.raw;
                b.specs.push((*info, sampler_word(&s)));
                b.samplers.push(s);
            }
            _ => return err(CL_INVALID_KERNEL_ARGS),
        }
    }
    Ok(b)
}

/// A sampler's modes as the word kernels read (`Slot::Sampler`).
fn sampler_word(s: &Sampler) -> u32 {
    let st = s.state;
    let mut flags = 0;
    if st.normalized {
        flags |= SAMPLER_NORMALIZED;
    }
    if st.filter == CL_FILTER_LINEAR {
        flags |= SAMPLER_LINEAR;
    }
    if st.addressing == CL_ADDRESS_REPEAT {
        flags |= SAMPLER_REPEAT;
    }
    if st.addressing == CL_ADDRESS_CLAMP {
        flags |= SAMPLER_BORDER;
    }
    if st.addressing == CL_ADDRESS_MIRRORED_REPEAT {
        flags |= SAMPLER_MIRROR;
    }
    flags
}

/// Places the relocated `__local` arguments in each work-group's scratch
/// region after the kernel's own local data, each aligned to at least 16
/// bytes, with lengths from `specs` (SpecId, elements); adds their offsets
/// and, after the last, the region's size (a multiple of 16) to `specs`.
/// Returns the size of a work-group's region. CL_OUT_OF_RESOURCES where
/// an offset or the size passes 32 bits.
fn place_local_args(scratch: &Scratch, specs: &mut Vec<(u32, u32)>) -> ClResult<u64> {
    let mut local_stride = u64::from(scratch.local_bytes);
    for arg in &scratch.local_args {
        let length = specs
            .iter()
            .find(|(id, _)| *id == arg.length_spec_id)
            .map_or(0, |&(_, n)| u64::from(n));
        let offset = local_stride.next_multiple_of(u64::from(arg.align.max(16)));
        local_stride = offset + length * u64::from(arg.elem_size);
        let offset = u32::try_from(offset).map_err(|_| ClError(CL_OUT_OF_RESOURCES))?;
        specs.push((arg.offset_spec_id, offset));
        if Some(arg) == scratch.local_args.last() {
            local_stride = local_stride.next_multiple_of(16);
            let stride = u32::try_from(local_stride).map_err(|_| ClError(CL_OUT_OF_RESOURCES))?;
            specs.push((LOCAL_STRIDE_SPEC_ID, stride));
        }
    }
    Ok(local_stride)
}

/// The scratch memory of an NDRange: a region of relocated private data
/// per work-item (all of them aligned to [`MIN_ALIGNMENT`]), then one of
/// `local_stride` bytes per work-group. `(private bytes, total bytes)`, or
/// `None` where the kernel needs none or the range is empty;
/// CL_OUT_OF_RESOURCES (with a warning) past 32 bits, which the kernel's
/// offsets have.
fn scratch_size(
    range: &NdRange,
    scratch: &Scratch,
    local_stride: u64,
) -> ClResult<Option<(u64, u64)>> {
    if *scratch == Default::default() || range.is_empty() {
        return Ok(None);
    }
    let private =
        (range.work_items() * u64::from(scratch.private_bytes)).next_multiple_of(MIN_ALIGNMENT);
    let total = private + range.work_groups() * local_stride;
    if total > u64::from(u32::MAX) {
        log::warn!(target: "vkcl::kernel", "relocated private and local data need {total} bytes of scratch memory, more than vkcl supports");
        return err(CL_OUT_OF_RESOURCES);
    }
    Ok(Some((private, total)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::spirv::p3_interface::relocate::LocalArg;

    #[test]
    fn partial_groups_make_up_to_eight_regions() {
        let r = Region::split([7, 5, 4], [3, 2, 2]);
        assert_eq!(r.len(), 4);
        assert_eq!(
            r[0],
            Region {
                first: [0, 0, 0],
                groups: [2, 2, 2],
                local: [3, 2, 2]
            }
        );
        assert_eq!(
            r[3],
            Region {
                first: [2, 2, 0],
                groups: [1, 1, 2],
                local: [1, 1, 2]
            }
        );
        assert_eq!(Region::split([7, 5, 3], [3, 2, 2]).len(), 8);
        assert_eq!(Region::split([6, 4, 2], [3, 2, 2]).len(), 1);
        assert!(Region::split([0, 1, 1], [1, 1, 1]).is_empty());
    }

    #[test]
    fn regions_split_at_the_dispatch_limit() {
        let r = Region {
            first: [0, 3, 0],
            groups: [10, 1, 1],
            local: [1, 1, 1],
        };
        assert_eq!(
            r.chunks([4, 4, 4]),
            vec![
                ([0, 3, 0], [4, 1, 1]),
                ([4, 3, 0], [4, 1, 1]),
                ([8, 3, 0], [2, 1, 1]),
            ]
        );
        // Within the limit: one dispatch of the whole region.
        assert_eq!(r.chunks([16, 1, 1]), vec![([0, 3, 0], [10, 1, 1])]);
    }

    #[test]
    fn every_chunk_covers_each_group_once() {
        let range = NdRange::with_local(&[], &[1000, 7, 3], [16, 2, 1]);
        let mut seen = std::collections::HashSet::new();
        for region in range.regions() {
            for (first, count) in region.chunks([5, 2, 65535]) {
                assert!(
                    count
                        .iter()
                        .zip([5, 2, 65535])
                        .all(|(&c, m)| c >= 1 && c <= m)
                );
                for x in 0..count[0] {
                    for y in 0..count[1] {
                        for z in 0..count[2] {
                            let g = [first[0] + x, first[1] + y, first[2] + z];
                            assert!(seen.insert(g), "group {g:?} twice");
                        }
                    }
                }
            }
        }
        assert_eq!(seen.len() as u64, range.work_groups());
    }

    #[test]
    fn local_sizes_divide_the_global_size_within_the_limits() {
        let max = [1024, 1024, 64];
        // The largest divisor within 256 items, then what is left.
        assert_eq!(choose_local([1024, 1, 1], max, None, 1024), [256, 1, 1]);
        assert_eq!(choose_local([100, 100, 1], max, None, 1024), [100, 2, 1]);
        assert_eq!(choose_local([17, 3, 1], max, None, 1024), [17, 3, 1]);
        // Primes larger than the budget get groups of one.
        assert_eq!(choose_local([257, 1, 1], max, None, 1024), [1, 1, 1]);
        // The kernel's own limit and the device's per dimension.
        assert_eq!(choose_local([64, 64, 1], max, None, 32), [32, 1, 1]);
        assert_eq!(choose_local([8, 8, 8], [2, 2, 2], None, 1024), [2, 2, 2]);
        assert_eq!(choose_local([1, 1, 512], max, None, 1024), [1, 1, 64]);
        // A required size wins; an empty range still gets groups of one.
        assert_eq!(
            choose_local([64, 64, 1], max, Some([8, 4, 1]), 1024),
            [8, 4, 1]
        );
        assert_eq!(choose_local([0, 1, 1], max, None, 1024), [1, 1, 1]);
    }

    #[test]
    fn ndranges_pad_to_three_dimensions() {
        let r = NdRange::with_local(&[5], &[10], [2, 1, 1]);
        assert_eq!(r.work_dim, 1);
        assert_eq!(r.offset, [5, 0, 0]);
        assert_eq!(r.global, [10, 1, 1]);
        assert!(r.uniform());
        assert!(!r.single_work_item());
        assert_eq!((r.work_items(), r.work_groups()), (10, 5));
        let r = NdRange::with_local(&[], &[10, 3], [4, 2, 1]);
        assert!(!r.uniform());
        assert_eq!(r.work_groups(), 3 * 2);
        assert!(NdRange::with_local(&[], &[1], [1; 3]).single_work_item());
        assert!(NdRange::with_local(&[], &[0, 4], [1; 3]).is_empty());
    }

    #[test]
    fn global_ids_must_fit_32_bits() {
        let max = u32::MAX as usize;
        assert!(NdRange::with_local(&[1], &[max - 1], [1; 3]).fits_32_bit_ids());
        assert!(!NdRange::with_local(&[2], &[max - 1], [1; 3]).fits_32_bit_ids());
        assert!(!NdRange::with_local(&[0, 0], &[1, max + 1], [1; 3]).fits_32_bit_ids());
    }

    #[test]
    fn push_constants_carry_the_ndrange() {
        let r = NdRange::with_local(&[1, 2], &[30, 40], [3, 4, 1]);
        let push = r.push_constants(96);
        assert_eq!(push.len(), 96);
        let word =
            |at: u32| u32::from_ne_bytes(push[at as usize..at as usize + 4].try_into().unwrap());
        assert_eq!(
            [
                word(GLOBAL_OFFSET),
                word(GLOBAL_OFFSET + 4),
                word(GLOBAL_OFFSET + 8)
            ],
            [1, 2, 0]
        );
        assert_eq!(
            [
                word(GLOBAL_SIZE),
                word(GLOBAL_SIZE + 4),
                word(GLOBAL_SIZE + 8)
            ],
            [30, 40, 1]
        );
        assert_eq!(
            [
                word(ENQUEUED_LOCAL_SIZE),
                word(ENQUEUED_LOCAL_SIZE + 4),
                word(ENQUEUED_LOCAL_SIZE + 8)
            ],
            [3, 4, 1]
        );
        assert_eq!(word(WORK_DIM), 2);
        // Group offsets are each dispatch's; the rest is the kernel's.
        assert_eq!(word(GROUP_OFFSET), 0);
        assert!(push[PRINTF_BUFFER as usize..].iter().all(|&b| b == 0));
    }

    #[test]
    fn local_arguments_follow_the_kernel_local_data() {
        let arg = |length_spec_id, elem_size, align, offset_spec_id| LocalArg {
            length_spec_id,
            elem_size,
            align,
            offset_spec_id,
        };
        let scratch = Scratch {
            private_bytes: 0,
            local_bytes: 20,
            local_args: vec![arg(3, 4, 4, 0x8001), arg(4, 8, 64, 0x8002)],
        };
        // 10 ints, then 3 longs aligned to 64.
        let mut specs = vec![(3, 10), (4, 3)];
        let stride = place_local_args(&scratch, &mut specs).unwrap();
        // 20 → 32 (16-aligned), +40 = 72 → 128 (64-aligned), +24 = 152 → 160.
        assert_eq!(stride, 160);
        assert_eq!(
            specs[2..],
            [(0x8001, 32), (0x8002, 128), (LOCAL_STRIDE_SPEC_ID, 160)]
        );
        // Without relocated arguments only the kernel's own data counts.
        let mut specs = Vec::new();
        let own = Scratch {
            local_bytes: 48,
            ..Default::default()
        };
        assert_eq!(place_local_args(&own, &mut specs).unwrap(), 48);
        assert!(specs.is_empty());
        // Offsets past 32 bits cannot be specialization constants.
        let mut specs = vec![(3, u32::MAX), (4, 1)];
        assert_eq!(
            place_local_args(&scratch, &mut specs),
            Err(ClError(CL_OUT_OF_RESOURCES))
        );
    }

    #[test]
    fn scratch_holds_private_data_then_local_data_per_group() {
        let scratch = Scratch {
            private_bytes: 16,
            local_bytes: 64,
            local_args: Vec::new(),
        };
        let range = NdRange::with_local(&[], &[100, 3], [10, 2, 1]);
        // 300 items of 16 bytes, aligned; then 10 x 2 groups of 64 bytes.
        let private = (300 * 16u64).next_multiple_of(MIN_ALIGNMENT);
        assert_eq!(
            scratch_size(&range, &scratch, 64),
            Ok(Some((private, private + 20 * 64)))
        );
        let empty = NdRange::with_local(&[], &[0], [1; 3]);
        assert_eq!(scratch_size(&empty, &scratch, 64), Ok(None));
        assert_eq!(scratch_size(&range, &Scratch::default(), 0), Ok(None));
        let huge = NdRange::with_local(&[], &[1 << 20, 1 << 10], [1; 3]);
        assert_eq!(
            scratch_size(&huge, &scratch, 64),
            Err(ClError(CL_OUT_OF_RESOURCES))
        );
    }
}
