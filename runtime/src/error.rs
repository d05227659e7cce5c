//! Errors of the replay: every failure is a value, never a panic. Two kinds:
//! an input at fault ([`Error::is_input`]: an unreadable, truncated, hostile
//! or mis-shaped tensor file, or a tensor or call over a size limit), which
//! the caller reports as an input error, and everything else, a call the
//! runtime cannot replay, which becomes a `skip` row naming the reason.

/// Why an op could not be replayed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API has no entry in the op table.
    #[error("{0} is not in the runtime's op table")]
    UnknownOp(String),
    /// The API is one the runtime never replays, for a reason
    /// ([`crate::ops::reasons`]).
    #[error("{api} is not replayed natively: {reason}")]
    NotReplayed {
        /// `Prefix.op`.
        api: String,
        /// The reason's sentence.
        reason: &'static str,
    },
    /// Arguments do not bind or have the wrong type.
    #[error("{0}")]
    Arg(String),
    /// The op does not support this case (dtype, option).
    #[error("{0}")]
    Unsupported(String),
    /// candle rejected the computation (shapes, dtypes).
    #[error("candle: {0}")]
    Candle(#[from] candle_core::Error),
    /// A tensor input is missing or does not match the dump (no data file,
    /// another shape).
    #[error("{0}")]
    Input(String),
    /// Reading a tensor file failed.
    #[error(transparent)]
    Io(#[from] crate::io::IoError),
    /// A tensor, or the whole call, is over a size limit ([`crate::limits`]).
    #[error(transparent)]
    TooLarge(#[from] crate::limits::TooLarge),
    /// A panic inside candle, caught at the op boundary.
    #[error("internal panic in the numeric backend: {0}")]
    Panic(String),
}

impl Error {
    /// Whether the input is at fault (a broken tensor file, a tensor or
    /// call over a size limit), as opposed to a call the runtime cannot
    /// replay.
    pub fn is_input(&self) -> bool {
        matches!(self, Error::Io(_) | Error::Input(_) | Error::TooLarge(_))
    }
}

/// Result of the runtime.
pub type Result<T, E = Error> = std::result::Result<T, E>;
