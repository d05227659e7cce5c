//! The one dtype table of msprobe-rs: every spelling msprobe writes (torch's
//! `torch.float32` / `torch.half`, MindSpore's `Float32`, NumPy's `float32`)
//! maps to one [`TDType`], used by the dump model, the tensor readers, the
//! renderers and the runtime alike.
//!
//! In the runtime every tensor is *stored* in the run's compute precision
//! (f64 for the bench, f32 for the emulated device); the logical [`TDType`]
//! decides rounding, integer semantics and promotion. A complex tensor is
//! not stored under its complex dtype ([`TDType::is_computable`]): the
//! replay lowers it to float pairs of its parts' dtype ([`TDType::component`]).

use candle_core::DType;

/// A torch dtype (MindSpore names map onto the same set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TDType {
    /// torch.bool
    Bool,
    /// torch.uint8
    U8,
    /// torch.int8
    I8,
    /// torch.int16
    I16,
    /// torch.int32
    I32,
    /// torch.int64
    I64,
    /// torch.uint16
    U16,
    /// torch.uint32
    U32,
    /// torch.uint64
    U64,
    /// torch.float16
    F16,
    /// torch.bfloat16
    BF16,
    /// torch.float32
    F32,
    /// torch.float64
    F64,
    /// torch.complex64: replayed as float32 pairs.
    C64,
    /// torch.complex128: replayed as float64 pairs.
    C128,
}

/// Promotion category: bool < integer < floating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    /// bool
    Bool,
    /// any integer
    Int,
    /// any float
    Float,
    /// any complex
    Complex,
}

const NAMES: &[(&str, TDType)] = &[
    ("bool", TDType::Bool),
    ("uint8", TDType::U8),
    ("int8", TDType::I8),
    ("int16", TDType::I16),
    ("short", TDType::I16),
    ("int32", TDType::I32),
    ("int", TDType::I32),
    ("int64", TDType::I64),
    ("long", TDType::I64),
    ("uint16", TDType::U16),
    ("uint32", TDType::U32),
    ("uint64", TDType::U64),
    ("float16", TDType::F16),
    ("half", TDType::F16),
    ("bfloat16", TDType::BF16),
    ("float32", TDType::F32),
    ("float", TDType::F32),
    ("float64", TDType::F64),
    ("double", TDType::F64),
    ("complex64", TDType::C64),
    ("cfloat", TDType::C64),
    ("complex128", TDType::C128),
    ("cdouble", TDType::C128),
];

impl TDType {
    /// Parses `torch.float32`, `float32`, `Float32`, `BFloat16`, `Int64`,
    /// `torch.half`, `torch.cfloat`, mindtorch 0.4.0's `mindtorch.float32`
    /// (MSAdapter dumps mix it with MindSpore's `Float32`), ...; `None` for
    /// dtypes msprobe-rs does not know (e.g. MindSpore's `Int4`).
    pub fn parse(s: &str) -> Option<TDType> {
        let s = s.strip_prefix("torch.").or_else(|| s.strip_prefix("mindtorch.")).unwrap_or(s);
        let lower = s.to_ascii_lowercase();
        NAMES.iter().find(|(n, _)| *n == lower).map(|&(_, d)| d)
    }

    /// The canonical torch name without `torch.`.
    pub fn name(self) -> &'static str {
        NAMES.iter().find(|(_, d)| *d == self).map(|(n, _)| *n).unwrap_or("?")
    }

    /// MindSpore's spelling (`Float32`), used in reports of MindSpore dumps.
    pub fn mindspore_name(self) -> &'static str {
        match self {
            TDType::Bool => "Bool",
            TDType::U8 => "UInt8",
            TDType::I8 => "Int8",
            TDType::I16 => "Int16",
            TDType::I32 => "Int32",
            TDType::I64 => "Int64",
            TDType::U16 => "UInt16",
            TDType::U32 => "UInt32",
            TDType::U64 => "UInt64",
            TDType::F16 => "Float16",
            TDType::BF16 => "BFloat16",
            TDType::F32 => "Float32",
            TDType::F64 => "Float64",
            TDType::C64 => "Complex64",
            TDType::C128 => "Complex128",
        }
    }

    /// The variant's name in Rust source (`F32`), for generated projects.
    pub fn variant(self) -> &'static str {
        match self {
            TDType::Bool => "Bool",
            TDType::U8 => "U8",
            TDType::I8 => "I8",
            TDType::I16 => "I16",
            TDType::I32 => "I32",
            TDType::I64 => "I64",
            TDType::U16 => "U16",
            TDType::U32 => "U32",
            TDType::U64 => "U64",
            TDType::F16 => "F16",
            TDType::BF16 => "BF16",
            TDType::F32 => "F32",
            TDType::F64 => "F64",
            TDType::C64 => "C64",
            TDType::C128 => "C128",
        }
    }

    /// The real dtype of each part (real, imaginary) of a complex dtype,
    /// which its values are judged by; a real dtype itself.
    pub fn component(self) -> TDType {
        match self {
            TDType::C64 => TDType::F32,
            TDType::C128 => TDType::F64,
            d => d,
        }
    }

    /// Whether a runtime tensor can hold it as it is (every dtype but
    /// complex, which is held as float pairs).
    pub fn is_computable(self) -> bool {
        self.category() != Category::Complex
    }

    /// Bytes per element as stored in a tensor file.
    pub fn itemsize(self) -> usize {
        self.bits().div_ceil(8) as usize
    }

    /// bool / int / float.
    pub fn category(self) -> Category {
        match self {
            TDType::Bool => Category::Bool,
            TDType::F16 | TDType::BF16 | TDType::F32 | TDType::F64 => Category::Float,
            TDType::C64 | TDType::C128 => Category::Complex,
            _ => Category::Int,
        }
    }

    /// True for floating dtypes.
    pub fn is_float(self) -> bool {
        self.category() == Category::Float
    }

    /// `(mantissa bits, smallest normal exponent)` of a floating dtype:
    /// its spacing (ULP), unit roundoff `2^-(mant+1)` and underflow unit
    /// `2^(emin-mant-1)` (half its smallest subnormal) follow; `None` otherwise.
    pub fn float_format(self) -> Option<(i32, i32)> {
        match self {
            TDType::F16 => Some((10, -14)),
            TDType::BF16 => Some((7, -126)),
            TDType::F32 => Some((23, -126)),
            TDType::F64 => Some((52, -1022)),
            _ => None,
        }
    }

    /// The candle dtype that rounds values to this dtype on the way through,
    /// or `None` when the compute precision already holds every value.
    pub fn rounding(self) -> Option<DType> {
        match self {
            TDType::F16 => Some(DType::F16),
            TDType::BF16 => Some(DType::BF16),
            TDType::F32 => Some(DType::F32),
            _ => None,
        }
    }

    /// The smallest and largest values of an integer dtype (as float64,
    /// where the 64-bit bounds round to ±2^63 and 2^64); `None` otherwise.
    pub fn int_range(self) -> Option<(f64, f64)> {
        use TDType::*;
        Some(match self {
            U8 => (0.0, u8::MAX as f64),
            I8 => (i8::MIN as f64, i8::MAX as f64),
            I16 => (i16::MIN as f64, i16::MAX as f64),
            I32 => (i32::MIN as f64, i32::MAX as f64),
            I64 => (i64::MIN as f64, i64::MAX as f64),
            U16 => (0.0, u16::MAX as f64),
            U32 => (0.0, u32::MAX as f64),
            U64 => (0.0, u64::MAX as f64),
            _ => return None,
        })
    }

    /// Bits of the type, to order dtypes within a category.
    pub fn bits(self) -> u32 {
        match self {
            TDType::Bool | TDType::U8 | TDType::I8 => 8,
            TDType::I16 | TDType::U16 | TDType::F16 | TDType::BF16 => 16,
            TDType::I32 | TDType::U32 | TDType::F32 => 32,
            TDType::I64 | TDType::U64 | TDType::F64 | TDType::C64 => 64,
            TDType::C128 => 128,
        }
    }

    /// torch.promote_types for two dtypes.
    pub fn promote(a: TDType, b: TDType) -> TDType {
        use TDType::*;
        if a == b {
            return a;
        }
        match (a.category(), b.category()) {
            // A complex with a float64 needs complex128 to hold both.
            (Category::Complex, Category::Float) if b == F64 => C128,
            (Category::Float, Category::Complex) if a == F64 => C128,
            (x, y) if x != y => {
                if x > y {
                    a
                } else {
                    b
                }
            }
            (Category::Complex, _) => {
                if a.bits() >= b.bits() {
                    a
                } else {
                    b
                }
            }
            (Category::Float, _) => match (a, b) {
                (F16, BF16) | (BF16, F16) => F32,
                _ => {
                    if a.bits() >= b.bits() {
                        a
                    } else {
                        b
                    }
                }
            },
            _ => {
                // Integers: unsigned with signed widens to a signed type that holds both.
                let signed = |d: TDType| matches!(d, I8 | I16 | I32 | I64);
                match (signed(a), signed(b)) {
                    (true, true) | (false, false) => {
                        if a.bits() >= b.bits() {
                            a
                        } else {
                            b
                        }
                    }
                    _ => {
                        let (s, u) = if signed(a) { (a, b) } else { (b, a) };
                        if s.bits() > u.bits() {
                            s
                        } else {
                            match u.bits() {
                                8 => I16,
                                16 => I32,
                                _ => I64,
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Accessors for rendering the dtype table into the generated scripts.
impl TDType {
    /// Every dtype, by category and width, as the scripts' tables list them.
    pub const ALL: [TDType; 15] = [
        TDType::Bool,
        TDType::U8,
        TDType::I8,
        TDType::I16,
        TDType::U16,
        TDType::I32,
        TDType::U32,
        TDType::I64,
        TDType::U64,
        TDType::F16,
        TDType::BF16,
        TDType::F32,
        TDType::F64,
        TDType::C64,
        TDType::C128,
    ];

    /// Every name torch gives the dtype after `torch.`, the canonical one
    /// first (`float32`, `float`).
    pub fn torch_names(self) -> impl Iterator<Item = &'static str> {
        NAMES.iter().filter(move |(_, d)| *d == self).map(|(n, _)| *n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_spellings() {
        assert_eq!(TDType::parse("torch.half"), Some(TDType::F16));
        assert_eq!(TDType::parse("BFloat16"), Some(TDType::BF16));
        assert_eq!(TDType::parse("Int64"), Some(TDType::I64));
        assert_eq!(TDType::parse("torch.cfloat"), Some(TDType::C64));
        assert_eq!(TDType::parse("Complex128"), Some(TDType::C128));
        assert_eq!(TDType::parse("Int4"), None);
    }

    #[test]
    fn parses_msadapter_spellings() {
        // mindtorch 0.4.0's own dtype strings beside MindSpore's, as one MSAdapter dump holds them.
        for (mindtorch, mindspore, d) in [
            ("mindtorch.float32", "Float32", TDType::F32),
            ("mindtorch.int64", "Int64", TDType::I64),
            ("mindtorch.bfloat16", "BFloat16", TDType::BF16),
            ("mindtorch.float16", "Float16", TDType::F16),
            ("mindtorch.bool", "Bool", TDType::Bool),
        ] {
            assert_eq!((TDType::parse(mindtorch), TDType::parse(mindspore)), (Some(d), Some(d)), "{mindtorch}");
        }
        assert_eq!(TDType::parse("mindtorch.half"), Some(TDType::F16));
        assert_eq!(TDType::parse("mindtorch.float7"), None);
        assert_eq!(TDType::parse("mindtorch.torch.float32"), None);
        assert_eq!(TDType::parse("mindtorch"), None);
        assert!(!TDType::C64.is_computable() && TDType::BF16.is_computable());
        assert_eq!((TDType::BF16.itemsize(), TDType::Bool.itemsize(), TDType::C128.itemsize()), (2, 1, 16));
    }

    #[test]
    fn promotes_like_torch() {
        use TDType::*;
        assert_eq!(TDType::promote(F16, BF16), F32);
        assert_eq!(TDType::promote(I64, F16), F16);
        assert_eq!(TDType::promote(U8, I8), I16);
        assert_eq!(TDType::promote(Bool, I32), I32);
        assert_eq!(TDType::promote(F32, F64), F64);
        assert_eq!(TDType::promote(C64, F64), C128);
        assert_eq!(TDType::promote(C64, F16), C64);
    }
}
