//! Errors of the replay: every failure is a value, never a panic, so a bad
//! dump ends up as a message in the CSV's Message column.

/// Why an op could not be replayed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API has no entry in the op table.
    #[error("{0} is not in the runtime's op table")]
    UnknownOp(String),
    /// Arguments do not bind or have the wrong type.
    #[error("{0}")]
    Arg(String),
    /// The op does not support this case (dtype, option).
    #[error("{0}")]
    Unsupported(String),
    /// candle rejected the computation (shapes, dtypes).
    #[error("candle: {0}")]
    Candle(#[from] candle_core::Error),
    /// Reading a tensor file failed.
    #[error(transparent)]
    Io(#[from] crate::io::IoError),
    /// A panic inside candle, caught at the op boundary.
    #[error("internal panic in the numeric backend: {0}")]
    Panic(String),
}

/// Result of the runtime.
pub type Result<T, E = Error> = std::result::Result<T, E>;
