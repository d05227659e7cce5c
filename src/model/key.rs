//! API names: `Prefix.op.N` and the dump keys built from them.

use std::fmt;

pub use runtime::prefix::Prefix;

/// Forward or backward half of an API call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// The call itself.
    Forward,
    /// Its gradient.
    Backward,
}

impl Direction {
    /// Parses the dump-key suffix / config spelling.
    pub fn parse(s: &str) -> Option<Direction> {
        match s {
            "forward" => Some(Direction::Forward),
            "backward" => Some(Direction::Backward),
            _ => None,
        }
    }

    /// The dump-key suffix (`forward` / `backward`).
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Forward => "forward",
            Direction::Backward => "backward",
        }
    }
}

/// A validated API call name, `Prefix.op.N` (or `Prefix.a.b.N` for the rare
/// dotted names). Every part is an identifier or a number, so the name is safe
/// to use as a file name and as a Python attribute path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApiName {
    /// First segment.
    pub prefix: Prefix,
    /// The op, one or two identifiers joined by `.`.
    pub op: String,
    /// The call counter as dumped (digits).
    pub call: String,
}

/// Why a name is not an API call name; the message is what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Not of the shape `Prefix.op.N`.
    #[error("<Prefix>.<op>.<N> such as Tensor.add.0, got {0:?}")]
    Shape(String),
    /// The prefix is not one of the hooked namespaces.
    #[error("a prefix among Functional, Tensor, Torch, NPU, VF, Mint and MintFunctional, got {name:?}{hint}", name = .0, hint = module_hint(.0))]
    Prefix(String),
    /// Longer than msprobe's limit.
    #[error("an API name of at most 300 characters")]
    TooLong,
}

fn module_hint(prefix: &str) -> &'static str {
    match prefix {
        "Cell" | "Module" => " (module entries of mix-level dumps are not API calls)",
        _ => "",
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl ApiName {
    /// Parses `Prefix.op.N` (also `Prefix.a.b.N`).
    pub fn parse(s: &str) -> Result<ApiName, NameError> {
        if s.len() > 300 {
            return Err(NameError::TooLong);
        }
        let parts: Vec<&str> = s.split('.').collect();
        let shape_err = || NameError::Shape(s.to_string());
        if !(3..=4).contains(&parts.len()) {
            return Err(shape_err());
        }
        let prefix = Prefix::parse(parts[0]).ok_or_else(|| if is_identifier(parts[0]) { NameError::Prefix(parts[0].to_string()) } else { shape_err() })?;
        let call = parts[parts.len() - 1];
        let op_parts = &parts[1..parts.len() - 1];
        if call.is_empty() || !call.bytes().all(|b| b.is_ascii_digit()) || !op_parts.iter().all(|p| is_identifier(p)) {
            return Err(shape_err());
        }
        Ok(ApiName { prefix, op: op_parts.join("."), call: call.to_string() })
    }

    /// Parses a full dump key `Prefix.op.N.forward|backward`.
    pub fn parse_key(key: &str) -> Result<(ApiName, Direction), NameError> {
        let (base, dir) = key.rsplit_once('.').ok_or_else(|| NameError::Shape(key.to_string()))?;
        let dir = Direction::parse(dir).ok_or_else(|| NameError::Shape(key.to_string()))?;
        Ok((ApiName::parse(base)?, dir))
    }

    /// `Prefix.op`: the name the runtime's op table and tables beside it use.
    pub fn op_key(&self) -> String {
        format!("{}.{}", self.prefix.as_str(), self.op)
    }

    /// The dump key of one direction of this call.
    pub fn key(&self, dir: Direction) -> String {
        format!("{self}.{}", dir.as_str())
    }
}

impl fmt::Display for ApiName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.prefix.as_str(), self.op, self.call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Framework;

    #[test]
    fn parses_names_and_keys() {
        let n = ApiName::parse("Tensor.__iadd__.3").unwrap();
        assert_eq!((n.prefix, n.op.as_str(), n.call.as_str()), (Prefix::Tensor, "__iadd__", "3"));
        assert_eq!(ApiName::parse("Torch.linalg.norm.0").unwrap().op, "linalg.norm");
        let (n, d) = ApiName::parse_key("MintFunctional.linear.0.backward").unwrap();
        assert_eq!((n.to_string(), d), ("MintFunctional.linear.0".to_string(), Direction::Backward));
        // torch._VF's LSTM (nn.LSTM) is a PyTorch call; a collective is a named prefix, not the table's.
        let n = ApiName::parse("VF.lstm.0").unwrap();
        assert!(n.prefix == Prefix::Vf && n.prefix.replayable_in(Framework::PyTorch) && n.prefix.not_replayed().is_none());
        let n = ApiName::parse("Distributed.all_reduce.0").unwrap();
        assert!(!n.prefix.replayable_in(Framework::PyTorch) && n.prefix.not_replayed().is_some());
        let n = ApiName::parse("NPU.npu_fusion_attention.12").unwrap();
        assert_eq!((n.prefix, n.op_key(), n.to_string()), (Prefix::Npu, "NPU.npu_fusion_attention".to_string(), "NPU.npu_fusion_attention.12".to_string()));
        assert!(Prefix::Npu.replayable_in(Framework::PyTorch) && Prefix::Npu.replayable_in(Framework::MindTorch));
        assert!(!Prefix::Npu.replayable_in(Framework::MindSpore));
    }

    #[test]
    fn rejects_unsafe_names() {
        for bad in ["../x.0", "Tensor.add", "Tensor.a/b.0", "Tensor.add.x", "Tensor.a-b.0", "Tensor..0", "Tensor.add.0\n"] {
            assert!(ApiName::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(ApiName::parse("Module.fc.0"), Err(NameError::Prefix("Module".into())));
        assert_eq!(ApiName::parse("Npu.npu_rms_norm.0"), Err(NameError::Prefix("Npu".into())));
        assert_eq!(ApiName::parse(&format!("Tensor.{}.0", "a".repeat(300))), Err(NameError::TooLong));
    }
}
