//! What a compared value is: the pass it belongs to ([`Direction`]), and
//! where its tested side comes from ([`TestedSource`]: the dump's recorded
//! device value, or the emulated device, with the [`Reason`]). Their
//! `Display`s are the Message's texts.

use std::fmt;
use std::path::PathBuf;

use crate::ctx::Side;
use crate::device::{self, Kind};
use crate::grad_layout::Transform;
use crate::report::TestedOn;
use crate::spec::Framework;
use crate::value::Value;

use super::quirks;

/// What the bench side is, in every compared row's Message.
pub(super) const BENCH: &str = "bench: float64 recompute on the CPU";

/// How a row compared with a recorded transposed gradient says so.
pub(super) const TRANSPOSED: &str = "of the transposed input as the autograd node took it (weight.t()), compared with the computed gradient transposed";

/// The pass a row judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    /// The outputs.
    Forward,
    /// The gradients w.r.t. the inputs.
    Backward,
}

impl Direction {
    /// `forward` / `backward`, as row names spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Forward => "forward",
            Direction::Backward => "backward",
        }
    }

    /// What the pass yields: `output` / `gradient`.
    fn noun(self) -> &'static str {
        match self {
            Direction::Forward => "output",
            Direction::Backward => "gradient",
        }
    }
}

/// Why a recorded gradient of zeros is not judged as the device's.
pub const PLACEHOLDER: &str = "the recorded gradient is all zeros for an input the dump does not mark requires_grad: MindSpore's placeholder for an input it does not differentiate, not the device's gradient";

/// Why a tested value is the emulated device's rather than the recorded one.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Reason {
    /// random_data: a dump of statistics has no device values.
    RandomData,
    /// Real data, with emulation asked for.
    Requested,
    /// The dump names a tensor file that does not exist.
    FileMissing(Direction, PathBuf),
    /// The dump has no file for the value.
    NoFile(Direction),
    /// The dump recorded None.
    RecordedNone(Direction),
    /// The dump recorded a value of this non-tensor kind.
    RecordedKind(Direction, &'static str),
    /// The dump's list of values does not line up with the call's.
    NotLinedUp(Direction),
    /// A random op's mask is unknown without its recorded output.
    MaskUnknown,
    /// A cast to the input's own dtype ([`quirks::NOOP_CAST`]).
    NoopCast,
    /// The dump's list of gradients holds other values in this input's
    /// place (an autograd node's incoming gradient passed on): why.
    NotRecorded(String),
    /// The recorded gradient is MindSpore's zeros for an input it does not
    /// differentiate, not the device's gradient.
    Placeholder,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::RandomData => f.write_str("random_data has no device values"),
            Reason::Requested => f.write_str("emulation requested"),
            Reason::FileMissing(d, p) => write!(f, "no recorded {}: {} is missing", d.noun(), p.display()),
            Reason::NoFile(d) => write!(f, "no recorded {}: the dump has no file for it", d.noun()),
            Reason::RecordedNone(d) => write!(f, "no recorded {}: the dump recorded None", d.noun()),
            Reason::RecordedKind(d, kind) => write!(f, "no recorded {}: the dump recorded a {kind}", d.noun()),
            Reason::NotLinedUp(d) => write!(f, "the dump's {}s do not line up with the call's", d.noun()),
            Reason::MaskUnknown => f.write_str("a random op's mask is unknown without its recorded output"),
            Reason::NoopCast => f.write_str(quirks::NOOP_CAST),
            Reason::NotRecorded(why) => f.write_str(why),
            Reason::Placeholder => f.write_str(PLACEHOLDER),
        }
    }
}

/// Where a tested value comes from. [`TestedSource::text`] is the
/// Message's `tested: ...; bench: ...` part.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum TestedSource {
    /// The device's value recorded in the dump (an output or a gradient),
    /// in the layout the computed values were mapped into to compare.
    Recorded(Direction, Transform),
    /// The op run here on a device in the dumped dtypes (on the CPU: the
    /// emulated device), and why no recorded value is taken.
    Run(Kind, Reason),
}

impl TestedSource {
    /// The Message's `tested: ...; bench: ...` part for a dump of
    /// `framework`; it names the dump's maker when that is not the
    /// framework itself (`the MSAdapter dump`).
    pub fn text(&self, framework: Framework) -> String {
        match (self, framework.adapter()) {
            (TestedSource::Recorded(d, Transform::Same), None) => format!("tested: device {} recorded in the dump; {BENCH}", d.noun()),
            (TestedSource::Recorded(d, Transform::Same), Some(a)) => format!("tested: device {} recorded in the {a} dump; {BENCH}", d.noun()),
            (TestedSource::Recorded(d, Transform::Transposed), _) => format!("tested: device {} recorded in the dump, {TRANSPOSED}; {BENCH}", d.noun()),
            (TestedSource::Run(on, why), None) => format!("tested: {} in the dumped dtypes ({why}); {BENCH}", on.tested_noun()),
            (TestedSource::Run(on, why), Some(a)) => format!("tested: {} in the {a} dump's dtypes ({why}); {BENCH}", on.tested_noun()),
        }
    }
}

/// A tested value as planned: the recorded value, or why the emulated
/// device's is taken.
#[derive(Debug, Clone)]
pub(super) enum Source {
    /// The dump's device value, and how a computed value maps into its
    /// layout ([`super::plan::Plan::recorded_layout`]).
    Recorded(Value, Transform),
    /// The emulated device's value, for this reason.
    Emulated(Reason),
}

/// One tested value, ready to judge.
pub(super) struct Tested {
    /// The value (`None` when the side has none).
    pub value: Value,
    /// Where it comes from.
    pub source: TestedSource,
    /// The op run in the tested dtype on the CPU (the emulated device), for
    /// the rules that compare with a reference run.
    pub reference: Option<Value>,
}

impl Tested {
    /// The planned `source` of a value of `direction`, with the emulated
    /// device's value `device` (`None` when it did not run): a recorded value
    /// is judged against the emulated device as the reference run; an
    /// emulated one is its own reference.
    pub fn new(source: &Source, device: Option<Value>, direction: Direction) -> Tested {
        match source {
            Source::Recorded(v, transform) => Tested { value: v.clone(), source: TestedSource::Recorded(direction, *transform), reference: device },
            Source::Emulated(why) => Tested {
                value: device.clone().unwrap_or(Value::None),
                source: TestedSource::Run(device::for_side(Side::Device), why.clone()),
                reference: device,
            },
        }
    }

    /// Whether the reference run is this very value (the tested side is
    /// the emulated device): rules that compare with it cannot fail.
    pub fn reference_is_self(&self) -> bool {
        matches!(self.source, TestedSource::Run(..))
    }

    /// Whose values it holds: the emulated device's when it is its own reference.
    pub fn on(&self) -> TestedOn {
        if self.reference_is_self() {
            TestedOn::Emulated
        } else {
            TestedOn::Device
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_write_the_messages_tested_part() {
        let recorded = TestedSource::Recorded(Direction::Backward, Transform::Same);
        for fw in [Framework::PyTorch, Framework::MindSpore] {
            assert_eq!(recorded.text(fw), "tested: device gradient recorded in the dump; bench: float64 recompute on the CPU");
        }
        let missing = TestedSource::Run(Kind::Cpu, Reason::FileMissing(Direction::Forward, PathBuf::from("x.pt")));
        assert_eq!(
            missing.text(Framework::PyTorch),
            "tested: emulated device in the dumped dtypes (no recorded output: x.pt is missing); bench: float64 recompute on the CPU"
        );
        assert_eq!(recorded.text(Framework::MindTorch), "tested: device gradient recorded in the MSAdapter dump; bench: float64 recompute on the CPU");
        let random = TestedSource::Run(Kind::Cpu, Reason::RandomData);
        assert_eq!(
            random.text(Framework::MindTorch),
            "tested: emulated device in the MSAdapter dump's dtypes (random_data has no device values); bench: float64 recompute on the CPU"
        );
        assert_eq!(Reason::NotLinedUp(Direction::Backward).to_string(), "the dump's gradients do not line up with the call's");
        assert_eq!(Reason::RecordedKind(Direction::Forward, "int").to_string(), "no recorded output: the dump recorded a int");
        let transposed = TestedSource::Recorded(Direction::Backward, Transform::Transposed);
        assert_eq!(
            transposed.text(Framework::PyTorch),
            "tested: device gradient recorded in the dump, of the transposed input as the autograd node took it (weight.t()), compared with the computed gradient transposed; bench: float64 recompute on the CPU"
        );
    }
}
