//! Size limits: no dumped shape makes the replay allocate more than it may.
//!
//! Every tensor the replay realizes or reads is held as float64 values, so
//! its size is counted as elements × [`BYTES_PER_ELEMENT`], with
//! overflow-checked arithmetic, before anything is allocated:
//!
//! - a tensor larger than [`Limits::tensor_bytes`] is refused;
//! - a call whose estimated working set (every tensor of the entries
//!   replayed: the forward entry's inputs and outputs, and the backward
//!   entry's gradients when it replays backward; × 8 bytes × [`COPIES`],
//!   plus the op's own intermediates, such as attention's scores, × 8 bytes
//!   × [`INTERMEDIATE_COPIES`]) is
//!   larger than [`Limits::memory_budget`] is refused, and a batch runs
//!   calls concurrently only while their estimates together stay under it.
//!
//! Both default to a fraction of the memory available when the run starts
//! ([`available_memory`]).

use std::fmt;

use crate::spec::{Replay, Spec, TensorSpec};

/// Bytes a tensor element takes in the replay (float64 values, whatever
/// the dumped dtype).
pub const BYTES_PER_ELEMENT: u64 = 8;

/// Copies of each tensor a replay holds at once, for the working-set
/// estimate: the values, the bench's float64 tensor, the emulated device's
/// tensor, and the comparison's flat copy.
pub const COPIES: u64 = 4;

/// Copies of an op's intermediates ([`crate::ops::Op::intermediates`]) a
/// replay holds at once: forward and backward, on the bench and the
/// emulated device (attention's scores: the masked logits, their softmax,
/// and the gradients of both, per side, with autograd's saved copies).
pub const INTERMEDIATE_COPIES: u64 = 12;

/// Memory assumed available when the system does not say (8 GiB).
pub const FALLBACK_AVAILABLE: u64 = 8 << 30;

/// The default tensor size limit is this fraction of the available memory
/// (one such tensor, with its [`COPIES`], fills half of it).
const TENSOR_SHARE: u64 = 8;

/// The default memory budget is this fraction of the available memory.
const BUDGET_SHARE: u64 = 2;

/// The limits one replay runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest tensor, in bytes as float64 (elements × 8).
    pub tensor_bytes: u64,
    /// The largest estimated working set of one call, and of all the calls
    /// a batch runs at once, in bytes.
    pub memory_budget: u64,
}

/// A call whose sizes passed [`Limits::admit`], with its estimated working
/// set: what [`crate::replay::replay_admitted`] runs, so a caller that
/// schedules by the estimate does not make the runtime check twice.
#[derive(Debug)]
pub struct Admitted {
    replay: Replay,
    need: u64,
    limits: Limits,
}

impl Admitted {
    /// The call.
    pub fn replay(&self) -> &Replay {
        &self.replay
    }

    /// Its estimated working set in bytes ([`Limits::check`]).
    pub fn need(&self) -> u64 {
        self.need
    }

    /// The limits it was admitted under (the run bounds its tensors by them).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }
}

/// Which limit a call is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// [`Limits::tensor_bytes`].
    Tensor,
    /// [`Limits::memory_budget`].
    Budget,
}

/// Why a call is not replayed: a tensor, or the whole call, is over a limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLarge {
    /// The limit it is over.
    pub limit: Limit,
    /// What is too large, by how much, and the limit.
    pub message: String,
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TooLarge {}

impl Limits {
    /// The defaults: tensors up to 1/8 and a budget of 1/2 of `available`
    /// bytes.
    pub fn for_available(available: u64) -> Limits {
        Limits { tensor_bytes: available / TENSOR_SHARE, memory_budget: available / BUDGET_SHARE }
    }

    /// The defaults for the memory available now ([`available_memory`], or
    /// [`FALLBACK_AVAILABLE`] when the system does not say).
    pub fn from_available_memory() -> Limits {
        Limits::for_available(available_memory().unwrap_or(FALLBACK_AVAILABLE))
    }

    /// [`Limits::check`]s `r` once and keeps the estimate with it.
    pub fn admit(&self, r: Replay) -> Result<Admitted, TooLarge> {
        let need = self.check(&r)?;
        Ok(Admitted { replay: r, need, limits: *self })
    }

    /// Checks every tensor of the entries `r` replays against
    /// [`Limits::tensor_bytes`], then the call's estimated working set
    /// (their bytes × [`COPIES`], plus the op's intermediates × 8 bytes ×
    /// [`INTERMEDIATE_COPIES`]) against [`Limits::memory_budget`]; returns
    /// the estimate.
    pub fn check(&self, r: &Replay) -> Result<u64, TooLarge> {
        let mut total: u128 = 0;
        for (what, t) in tensors(r) {
            // A complex tensor is replayed as its float pairs: two values per element.
            let pairs = if t.dtype.is_computable() { 1 } else { 2 };
            let bytes = tensor_bytes(&t.shape).and_then(|b| b.checked_mul(pairs));
            if bytes.is_none_or(|b| b > u128::from(self.tensor_bytes)) {
                let needs = bytes.map_or_else(|| "more than 2^128".to_string(), |b| b.to_string());
                return Err(TooLarge {
                    limit: Limit::Tensor,
                    message: format!("{what}: shape {:?} needs {needs} bytes as float64, over the tensor size limit of {} bytes", t.shape, self.tensor_bytes),
                });
            }
            total += bytes.unwrap_or(0);
        }
        let inner = crate::ops::lookup(r.framework, &r.api.name()).map_or(0, |op| op.intermediates(r));
        let inner_bytes = inner.saturating_mul(u128::from(BYTES_PER_ELEMENT * INTERMEDIATE_COPIES));
        let set = total.saturating_mul(u128::from(COPIES)).saturating_add(inner_bytes);
        if set > u128::from(self.memory_budget) {
            return Err(TooLarge {
                limit: Limit::Budget,
                message: format!(
                    "the call needs an estimated {set} bytes (its tensors' {total} bytes as float64 × {COPIES} copies{}), over the memory budget of {} bytes",
                    if inner > 0 { format!(", and {inner} intermediate elements × {INTERMEDIATE_COPIES} copies") } else { String::new() },
                    self.memory_budget
                ),
            });
        }
        Ok(u64::try_from(set).unwrap_or(u64::MAX))
    }
}

/// Number of elements of `shape`, `None` when it does not fit in `usize`.
/// A zero dimension makes it 0 whatever the others are.
pub fn element_count(shape: &[usize]) -> Option<usize> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
}

/// Bytes of a tensor of `shape` as float64, `None` beyond 2^128.
fn tensor_bytes(shape: &[usize]) -> Option<u128> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(u128::from(BYTES_PER_ELEMENT), |acc, &d| acc.checked_mul(d as u128))
}

/// Every tensor of the entries `r` replays, named by where the dump has it
/// (`forward.input_args[0]`, `backward.input[0]`, ...).
fn tensors(r: &Replay) -> Vec<(String, &TensorSpec)> {
    let mut out = vec![];
    list("forward.input_args", &r.args, &mut out);
    for (k, s) in &r.kwargs {
        named(&format!("forward.input_kwargs.{k}"), s, &mut out);
    }
    list("forward.output", &r.outputs, &mut out);
    if let Some(g) = &r.grad_outputs {
        list("backward.input", g, &mut out);
        list("backward.output", &r.grad_inputs, &mut out);
    }
    out
}

/// The tensors of a list of specs, `prefix[i]` each.
fn list<'a>(prefix: &str, specs: &'a [Spec], out: &mut Vec<(String, &'a TensorSpec)>) {
    for (i, s) in specs.iter().enumerate() {
        named(&format!("{prefix}[{i}]"), s, out);
    }
}

/// The tensors of one spec, nested lists indexed.
fn named<'a>(what: &str, s: &'a Spec, out: &mut Vec<(String, &'a TensorSpec)>) {
    match s {
        Spec::Tensor(t) => out.push((what.to_string(), t)),
        Spec::List(items) => items.iter().enumerate().for_each(|(i, x)| named(&format!("{what}[{i}]"), x, out)),
        _ => {}
    }
}

/// The memory available to this process now, in bytes: the kernel's
/// `MemAvailable` (`/proc/meminfo`), lowered to what a cgroup v2 limit
/// still allows (`/sys/fs/cgroup/memory.max` − the working set:
/// `memory.current` less the reclaimable `inactive_file` of `memory.stat`)
/// where one is set; `None` where neither can be read.
pub fn available_memory() -> Option<u64> {
    let system = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| mem_available(&t));
    let read = |name: &str| std::fs::read_to_string(format!("/sys/fs/cgroup/{name}")).ok();
    let cgroup = match (read("memory.max"), read("memory.current")) {
        (Some(max), Some(current)) => cgroup_room(&max, &current, &read("memory.stat").unwrap_or_default()),
        _ => None,
    };
    match (system, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// What a cgroup v2 still allows: `memory.max` − (`memory.current` −
/// `inactive_file`, which the kernel reclaims first); `None` when there is
/// no limit (`max`) or the files are not numbers.
fn cgroup_room(max: &str, current: &str, stat: &str) -> Option<u64> {
    let max: u64 = max.trim().parse().ok()?;
    let current: u64 = current.trim().parse().ok()?;
    let inactive: u64 = stat.lines().find_map(|l| l.strip_prefix("inactive_file ")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    Some(max.saturating_sub(current.saturating_sub(inactive)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::TDType;
    use crate::spec::{ApiId, DataMode, Framework};
    use crate::standard::Standard;

    fn tensor(shape: &[usize]) -> Spec {
        Spec::Tensor(TensorSpec { dtype: TDType::F32, shape: shape.to_vec(), low: None, high: None, requires_grad: None, data: None })
    }

    fn call(args: Vec<Spec>, outputs: Vec<Spec>, grads: Option<(Vec<Spec>, Vec<Spec>)>) -> Replay {
        let (grad_outputs, grad_inputs) = match grads {
            Some((o, i)) => (Some(o), i),
            None => (None, vec![]),
        };
        Replay {
            api: ApiId { prefix: crate::prefix::Prefix::Torch, op: "mul".into(), call: "0".into() },
            framework: Framework::PyTorch,
            args,
            kwargs: vec![],
            outputs,
            grad_outputs,
            grad_inputs,
            data_mode: DataMode::Random,
            seed: 0,
            iterations: 1,
            cosine_threshold: 0.99,
            max_abs_err_threshold: 1e-4,
            standard: Standard::Msprobe,
            use_recorded: true,
            dump_device: crate::spec::DumpDevice::Cpu,
        }
    }

    #[test]
    fn counts_are_checked_and_zero_dims_are_empty() {
        assert_eq!(element_count(&[2, 3]), Some(6));
        assert_eq!(element_count(&[]), Some(1));
        assert_eq!(element_count(&[1 << 32, 1 << 32]), None);
        assert_eq!(element_count(&[usize::MAX, usize::MAX, 0]), Some(0));
        assert_eq!(tensor_bytes(&[1 << 32, 1 << 32]), Some(8 << 64));
        assert_eq!(tensor_bytes(&[usize::MAX; 3]), None);
    }

    #[test]
    fn a_tensor_over_the_limit_is_named_with_its_shape() {
        let limits = Limits { tensor_bytes: 1 << 30, memory_budget: 1 << 40 };
        let r = call(vec![tensor(&[4]), Spec::List(vec![tensor(&[2]), tensor(&[1 << 32, 1 << 32])])], vec![], None);
        let e = limits.check(&r).unwrap_err();
        assert_eq!(e.limit, Limit::Tensor);
        assert_eq!(
            e.to_string(),
            "forward.input_args[1][1]: shape [4294967296, 4294967296] needs 147573952589676412928 bytes as float64, over the tensor size limit of 1073741824 bytes"
        );
        let r = call(vec![tensor(&[usize::MAX; 3])], vec![], None);
        assert!(limits.check(&r).unwrap_err().to_string().contains("needs more than 2^128 bytes"));
    }

    #[test]
    fn admitting_keeps_the_estimate_and_refuses_as_check_does() {
        let limits = Limits { tensor_bytes: 64, memory_budget: 1 << 20 };
        let a = limits.admit(call(vec![tensor(&[8])], vec![tensor(&[8])], None)).unwrap();
        assert_eq!((a.need(), *a.limits()), (2 * 64 * COPIES, limits));
        assert_eq!(limits.admit(call(vec![tensor(&[100])], vec![], None)).unwrap_err().limit, Limit::Tensor);
    }

    #[test]
    fn backward_tensors_count_only_when_replaying_backward() {
        let limits = Limits { tensor_bytes: 64, memory_budget: 1 << 20 };
        let big = || vec![tensor(&[100])];
        assert_eq!(limits.check(&call(vec![tensor(&[8])], vec![tensor(&[8])], None)), Ok(2 * 64 * COPIES));
        let mut forward = call(vec![tensor(&[8])], vec![], None);
        forward.grad_inputs = big();
        assert_eq!(limits.check(&forward), Ok(64 * COPIES));
        let e = limits.check(&call(vec![tensor(&[8])], vec![], Some((vec![tensor(&[8])], big())))).unwrap_err();
        assert!(e.message.starts_with("backward.output[0]: shape [100] needs 800 bytes"), "{e}");
    }

    #[test]
    fn a_call_over_the_budget_says_its_estimate() {
        let limits = Limits { tensor_bytes: 1 << 20, memory_budget: 1000 };
        let r = call(vec![tensor(&[16]), tensor(&[16])], vec![tensor(&[16])], None);
        let e = limits.check(&r).unwrap_err();
        assert_eq!(e.limit, Limit::Budget);
        assert_eq!(
            e.to_string(),
            "the call needs an estimated 1536 bytes (its tensors' 384 bytes as float64 × 4 copies), over the memory budget of 1000 bytes"
        );
        assert_eq!(Limits { memory_budget: 1536, ..limits }.check(&r), Ok(1536));
    }

    #[test]
    fn available_memory_is_parsed_from_the_kernel_and_the_cgroup() {
        assert_eq!(mem_available("MemTotal:  100 kB\nMemAvailable:    2048 kB\n"), Some(2 << 20));
        assert_eq!(mem_available("MemTotal:  100 kB\n"), None);
        assert_eq!(cgroup_room("max\n", "5\n", ""), None);
        assert_eq!(cgroup_room("1000\n", "400\n", ""), Some(600));
        assert_eq!(cgroup_room("1000\n", "400\n", "active_file 50\ninactive_file 300\n"), Some(900));
        assert_eq!(cgroup_room("100\n", "400\n", "inactive_file x\n"), Some(0));
        assert_eq!(Limits::for_available(8 << 30), Limits { tensor_bytes: 1 << 30, memory_budget: 4 << 30 });
    }
}
