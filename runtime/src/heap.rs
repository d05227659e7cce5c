//! How freed memory goes back to the system. A replay allocates and frees
//! full-size tensors one after another (a float64 copy of each input, each
//! intermediate, each gradient); glibc's malloc serves every block over its
//! mmap threshold (at most 32 MB by its own heuristic) with a fresh mmap and
//! unmaps it on free, so each new tensor page-faults its pages in again:
//! measured on a `[8, 64, 112, 112]` batch_norm, 34 s of system time
//! against 30 s of work. Keeping freed blocks in the heap lets the next
//! tensor reuse those pages. The same holds across threads: a rayon worker
//! gets an arena of its own, whose large blocks are mapped and unmapped
//! alone whatever the threshold, so one arena serves every thread (measured
//! on a ResNet-50 step's tensor replay: 8.3 s of system time to 5.6 s, and
//! peak RSS 1.88 GB to 1.53 GB; a replay allocates few, large blocks, so
//! the shared lock costs nothing measurable). A kernel's large output is
//! first touched by the pool's threads side by side ([`filled`]).

use std::alloc::{GlobalAlloc, Layout, System};

use rayon::iter::{repeat_n, ParallelExtend};

/// Elements below which [`filled`] writes on the calling thread (a few
/// pages: not worth waking the pool).
const PARALLEL_FILL: usize = 1 << 15;

/// `len` copies of `value`, written by the pool's threads side by side
/// (rayon's indexed collect writes each part in place). A kernel's output
/// is filled before the kernel writes it in parallel: `vec![value; len]`
/// fills on one thread (the zeros too: [`WrittenZeros`] writes them), so
/// each fresh page of the heap faults in there, one after another, at
/// about 2 µs a page on a virtual machine (a fresh 64 MB written in
/// 34–37 ms, the same pages again in 2.4 ms). Filled side by side, the
/// threads fault their parts at once. Measured on the GPT-2 block's first
/// call, a layer_norm whose two outputs are the process's first touch of
/// 6 MB (2 threads, 8 runs each, medians): the call 13.7 ms to 10.3 ms.
pub fn filled<T: Clone + Send + Sync>(value: T, len: usize) -> Vec<T> {
    if len < PARALLEL_FILL {
        return vec![value; len];
    }
    let mut v = Vec::with_capacity(len);
    v.par_extend(repeat_n(value, len));
    v
}

/// Serves large blocks from the heap and keeps freed memory there (glibc
/// only; elsewhere the system allocator's own policy stands). Called once,
/// first thing in `main`.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets malloc's tunables; it is called before any
    // other thread exists.
    unsafe {
        // The largest value mallopt takes (an int): blocks of up to 2 GiB
        // come from the heap, larger ones are still mapped on their own.
        libc::mallopt(libc::M_MMAP_THRESHOLD, i32::MAX);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// The system allocator, except that a zeroed block is written with zeros
/// instead of being left to the kernel. glibc's calloc skips the memset for
/// memory fresh from the system, whose pages are mapped on first touch; a
/// block that is only read (candle's autograd starts each gradient from a
/// `zeros_like` it reads and never writes) maps each page to the kernel's
/// shared zero page. Once freed and reused (the heap keeps it, above), the
/// first write to each of those pages is a copy-on-write fault that flushes
/// the TLB of every core running a thread of the process. Writing the zeros
/// makes the first touch an ordinary fault. Measured on a ResNet-50 step's
/// tensor replay (2 threads): system time 15.4 s to 4.6 s, wall 24.5 s to
/// 18.3 s; the same with its elementwise calls alone, 3.6–7.1 s to
/// 1.6–2.3 s. The binary installs it as its global allocator.
pub struct WrittenZeros;

// SAFETY: every call is forwarded to the system allocator with the caller's
// layout; `alloc_zeroed` writes `layout.size()` bytes into the block it got.
unsafe impl GlobalAlloc for WrittenZeros {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let block = System.alloc(layout);
        if !block.is_null() {
            block.write_bytes(0, layout.size());
        }
        block
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        System.realloc(ptr, layout, new_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filled_vector_holds_the_value_bit_for_bit_whatever_its_length() {
        for len in [0, 1, PARALLEL_FILL - 1, PARALLEL_FILL, 3 * PARALLEL_FILL + 7] {
            let v = filled(-0.0f64, len);
            assert_eq!(v.len(), len);
            assert!(v.iter().all(|x| x.to_bits() == (-0.0f64).to_bits()), "len {len}");
            assert_eq!(filled(7u32, len), vec![7u32; len]);
        }
    }

    #[test]
    fn a_zeroed_block_reads_as_zeros_after_a_dirty_one_is_freed() {
        let layout = Layout::from_size_align(1 << 16, 8).unwrap();
        // SAFETY: blocks of a non-zero size, freed with their layout.
        unsafe {
            let dirty = WrittenZeros.alloc(layout);
            dirty.write_bytes(0xa5, layout.size());
            WrittenZeros.dealloc(dirty, layout);
            let zeroed = WrittenZeros.alloc_zeroed(layout);
            assert!(std::slice::from_raw_parts(zeroed, layout.size()).iter().all(|&b| b == 0));
            WrittenZeros.dealloc(zeroed, layout);
        }
    }
}
