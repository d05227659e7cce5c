//! Tensor element types in both frameworks' spellings.

/// What kind of numbers a tensor holds; decides how random data is drawn,
/// how far the bench raises precision, and whether a gradient exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DTypeKind {
    /// `torch.bool` / `Bool`.
    Bool,
    /// Signed or unsigned integers of the given width.
    Int { signed: bool, bits: u8 },
    /// IEEE floats of the given width (16, 32, 64).
    Float { bits: u8 },
    /// bfloat16.
    BFloat16,
    /// Complex floats of the given total width.
    Complex { bits: u8 },
}

/// A tensor dtype as dumped, with its canonical names in every framework the
/// generated scripts speak. One table below maps all spellings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DType {
    /// Canonical torch attribute name (`float32`), also used in numpy where it exists.
    pub torch: &'static str,
    /// MindSpore's `str(dtype)` spelling (`Float32`).
    pub mindspore: &'static str,
    /// The element kind.
    pub kind: DTypeKind,
}

const TABLE: &[(&[&str], &str, &str, DTypeKind)] = &[
    (&["torch.bool", "Bool", "bool"], "bool", "Bool", DTypeKind::Bool),
    (&["torch.uint8", "UInt8", "uint8"], "uint8", "UInt8", DTypeKind::Int { signed: false, bits: 8 }),
    (&["torch.int8", "Int8", "int8"], "int8", "Int8", DTypeKind::Int { signed: true, bits: 8 }),
    (&["torch.int16", "torch.short", "Int16", "int16"], "int16", "Int16", DTypeKind::Int { signed: true, bits: 16 }),
    (&["torch.uint16", "UInt16", "uint16"], "uint16", "UInt16", DTypeKind::Int { signed: false, bits: 16 }),
    (&["torch.int32", "torch.int", "Int32", "int32"], "int32", "Int32", DTypeKind::Int { signed: true, bits: 32 }),
    (&["torch.uint32", "UInt32", "uint32"], "uint32", "UInt32", DTypeKind::Int { signed: false, bits: 32 }),
    (&["torch.int64", "torch.long", "Int64", "int64"], "int64", "Int64", DTypeKind::Int { signed: true, bits: 64 }),
    (&["torch.uint64", "UInt64", "uint64"], "uint64", "UInt64", DTypeKind::Int { signed: false, bits: 64 }),
    (&["torch.float16", "torch.half", "Float16", "float16"], "float16", "Float16", DTypeKind::Float { bits: 16 }),
    (&["torch.bfloat16", "BFloat16", "bfloat16"], "bfloat16", "BFloat16", DTypeKind::BFloat16),
    (&["torch.float32", "torch.float", "Float32", "float32"], "float32", "Float32", DTypeKind::Float { bits: 32 }),
    (&["torch.float64", "torch.double", "Float64", "float64"], "float64", "Float64", DTypeKind::Float { bits: 64 }),
    (&["torch.complex64", "torch.cfloat", "Complex64", "complex64"], "complex64", "Complex64", DTypeKind::Complex { bits: 64 }),
    (&["torch.complex128", "torch.cdouble", "Complex128", "complex128"], "complex128", "Complex128", DTypeKind::Complex { bits: 128 }),
];

impl DType {
    /// Parses any spelling msprobe writes (`torch.half`, `BFloat16`, ...);
    /// `None` for dtypes the tool cannot replay (e.g. MindSpore's `Int4`).
    pub fn parse(s: &str) -> Option<DType> {
        TABLE
            .iter()
            .find(|(names, ..)| names.contains(&s))
            .map(|&(_, torch, mindspore, kind)| DType { torch, mindspore, kind })
    }

    /// True for floating dtypes, the only ones that carry gradients.
    pub fn is_float(&self) -> bool {
        matches!(self.kind, DTypeKind::Float { .. } | DTypeKind::BFloat16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_agree() {
        assert_eq!(DType::parse("torch.half"), DType::parse("Float16"));
        assert_eq!(DType::parse("BFloat16").unwrap().torch, "bfloat16");
        assert_eq!(DType::parse("torch.long").unwrap().mindspore, "Int64");
        assert!(DType::parse("Int4").is_none());
        assert!(DType::parse("torch.float32").unwrap().is_float());
        assert!(!DType::parse("Int32").unwrap().is_float());
    }
}
