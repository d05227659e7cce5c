//! A pickle interpreter for exactly what `torch.save(tensor)` writes: the
//! call `torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
//! requires_grad, OrderedDict())` (or `_rebuild_tensor_v3(..., dtype)` for
//! the unsigned dtypes torch 2 added), whose storage is a persistent id
//! `('storage', StorageClass, key, location, numel)`. Anything else (other
//! callables, classes, lists) is rejected with the opcode or name found, so
//! no pickle can run code or build unbounded structures here.

use std::collections::HashMap;
use std::rc::Rc;

use crate::dtype::TDType;

/// Deeper nesting is not a tensor pickle (and would make drops recurse).
const MAX_DEPTH: u8 = 16;

/// The storage a tensor views: the archive entry `data/<key>`.
#[derive(Debug)]
struct StorageRef {
    key: String,
    /// `None` for an untyped storage (the tensor call gives the dtype).
    dtype: Option<TDType>,
    /// Elements for typed storages, bytes for untyped ones.
    len: u64,
}

/// A tensor as the pickle describes it: a strided view of one storage.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TensorRecord {
    /// The storage's entry name under `data/`.
    pub key: String,
    /// The element type.
    pub dtype: TDType,
    /// Storage length in elements.
    pub storage_len: u64,
    /// Offset of the first element, in elements.
    pub offset: u64,
    /// Logical shape.
    pub size: Vec<u64>,
    /// Stride of each dim, in elements.
    pub stride: Vec<u64>,
}

#[derive(Debug, Clone)]
enum Value {
    None,
    Bool,
    Int(i64),
    Float,
    Str(Rc<str>),
    Global(Rc<(String, String)>),
    Tuple(Rc<[Value]>, u8),
    /// A dict or OrderedDict; only whether it holds anything matters.
    Dict { nonempty: bool },
    Storage(Rc<StorageRef>),
    Tensor(Rc<TensorRecord>),
}

impl Value {
    fn depth(&self) -> u8 {
        match self {
            Value::Tuple(_, d) => *d,
            _ => 0,
        }
    }
}

/// Runs the pickle and returns the tensor it builds.
pub(super) fn load_tensor(pkl: &[u8]) -> Result<TensorRecord, String> {
    let mut vm = Machine { pkl, pos: 0, stack: Vec::new(), marks: Vec::new(), memo: HashMap::new() };
    match vm.run()? {
        Value::Tensor(t) => Ok(Rc::unwrap_or_clone(t)),
        other => Err(format!("expected a pickled bare tensor (torch.save(tensor)), got {}", kind(&other))),
    }
}

struct Machine<'a> {
    pkl: &'a [u8],
    pos: usize,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: HashMap<u32, Value>,
}

impl Machine<'_> {
    fn run(&mut self) -> Result<Value, String> {
        loop {
            let at = self.pos;
            let op = self.bytes(1)?[0];
            match op {
                0x80 => {
                    self.bytes(1)?; // PROTO
                }
                0x95 => {
                    self.bytes(8)?; // FRAME
                }
                b'.' => return self.pop(), // STOP
                b'(' => self.marks.push(self.stack.len()),
                b'N' => self.stack.push(Value::None),
                0x88 | 0x89 => self.stack.push(Value::Bool), // NEWTRUE, NEWFALSE: requires_grad
                b'K' => {
                    let v = self.bytes(1)?[0];
                    self.stack.push(Value::Int(i64::from(v)));
                }
                b'M' => {
                    let v = u16::from_le_bytes(self.array()?);
                    self.stack.push(Value::Int(i64::from(v)));
                }
                b'J' => {
                    let v = i32::from_le_bytes(self.array()?);
                    self.stack.push(Value::Int(i64::from(v)));
                }
                0x8a => {
                    let n = usize::from(self.bytes(1)?[0]);
                    let v = self.long(n)?;
                    self.stack.push(Value::Int(v));
                }
                b'G' => {
                    self.bytes(8)?;
                    self.stack.push(Value::Float);
                }
                b'X' => {
                    let n = u32::from_le_bytes(self.array()?) as usize;
                    let s = self.text(n)?;
                    self.stack.push(s);
                }
                0x8c => {
                    let n = usize::from(self.bytes(1)?[0]);
                    let s = self.text(n)?;
                    self.stack.push(s);
                }
                0x8d => {
                    let n = usize::try_from(u64::from_le_bytes(self.array()?)).unwrap_or(usize::MAX);
                    let s = self.text(n)?;
                    self.stack.push(s);
                }
                b'c' => {
                    let module = self.line()?;
                    let name = self.line()?;
                    self.stack.push(Value::Global(Rc::new((module, name))));
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    match (module, name) {
                        (Value::Str(m), Value::Str(n)) => self.stack.push(Value::Global(Rc::new((m.to_string(), n.to_string())))),
                        _ => return Err(format!("expected two strings for STACK_GLOBAL at pickle offset {at}")),
                    }
                }
                b'q' => {
                    let k = u32::from(self.bytes(1)?[0]);
                    self.put(k)?;
                }
                b'r' => {
                    let k = u32::from_le_bytes(self.array()?);
                    self.put(k)?;
                }
                0x94 => {
                    let k = u32::try_from(self.memo.len()).map_err(|_| "expected a smaller pickle memo".to_string())?;
                    self.put(k)?;
                }
                b'h' => {
                    let k = u32::from(self.bytes(1)?[0]);
                    self.get(k)?;
                }
                b'j' => {
                    let k = u32::from_le_bytes(self.array()?);
                    self.get(k)?;
                }
                b')' => self.stack.push(Value::Tuple(Rc::from(Vec::new()), 1)),
                b't' => {
                    let items = self.pop_mark()?;
                    self.push_tuple(items)?;
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    let start = self.stack.len().checked_sub(n).ok_or_else(|| format!("expected {n} items for a tuple at pickle offset {at}"))?;
                    let items = self.stack.split_off(start);
                    self.push_tuple(items)?;
                }
                b'}' => self.stack.push(Value::Dict { nonempty: false }),
                b's' | b'u' => {
                    let items = if op == b's' { self.stack.split_off(self.stack.len().saturating_sub(2)) } else { self.pop_mark()? };
                    match self.stack.last_mut() {
                        Some(Value::Dict { nonempty }) => *nonempty |= !items.is_empty(),
                        _ => return Err(format!("expected a dict to set items on at pickle offset {at}")),
                    }
                }
                b'Q' => {
                    let pid = self.pop()?;
                    let storage = persistent_storage(&pid)?;
                    self.stack.push(Value::Storage(Rc::new(storage)));
                }
                b'R' => {
                    let args = self.pop()?;
                    let func = self.pop()?;
                    let value = reduce(&func, &args)?;
                    self.stack.push(value);
                }
                _ => {
                    return Err(format!(
                        "expected a tensor pickle, found unsupported opcode 0x{op:02x} at pickle offset {at}"
                    ))
                }
            }
        }
    }

    fn bytes(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.pkl.len()).ok_or("expected more pickle data: data.pkl is truncated")?;
        let b = &self.pkl[self.pos..end];
        self.pos = end;
        Ok(b)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let b = self.bytes(N)?;
        Ok(std::array::from_fn(|i| b.get(i).copied().unwrap_or(0)))
    }

    fn long(&mut self, n: usize) -> Result<i64, String> {
        if n > 8 {
            return Err(format!("expected an integer of at most 8 bytes, got {n} bytes"));
        }
        let b = self.bytes(n)?;
        let negative = b.last().is_some_and(|&x| x & 0x80 != 0);
        let mut full = [if negative { 0xff } else { 0 }; 8];
        full[..n].copy_from_slice(b);
        Ok(i64::from_le_bytes(full))
    }

    fn text(&mut self, n: usize) -> Result<Value, String> {
        let b = self.bytes(n)?;
        let s = std::str::from_utf8(b).map_err(|_| "expected UTF-8 text in the pickle".to_string())?;
        Ok(Value::Str(Rc::from(s)))
    }

    fn line(&mut self) -> Result<String, String> {
        let rest = self.pkl.get(self.pos..).unwrap_or_default();
        let n = rest.iter().position(|&b| b == b'\n').ok_or("expected a newline-terminated name in the pickle")?;
        let s = std::str::from_utf8(&rest[..n]).map_err(|_| "expected an ASCII name in the pickle".to_string())?.to_string();
        self.pos += n + 1;
        Ok(s)
    }

    fn pop(&mut self) -> Result<Value, String> {
        if self.marks.last().is_some_and(|&m| m >= self.stack.len()) {
            return Err(format!("expected a value on the pickle stack at offset {}, found a mark", self.pos));
        }
        self.stack.pop().ok_or_else(|| format!("expected a value on the pickle stack at offset {}", self.pos))
    }

    fn pop_mark(&mut self) -> Result<Vec<Value>, String> {
        let m = self.marks.pop().ok_or_else(|| format!("expected a mark on the pickle stack at offset {}", self.pos))?;
        Ok(self.stack.split_off(m.min(self.stack.len())))
    }

    fn push_tuple(&mut self, items: Vec<Value>) -> Result<(), String> {
        let depth = items.iter().map(Value::depth).max().unwrap_or(0) + 1;
        if depth > MAX_DEPTH {
            return Err(format!("expected a shallow tensor pickle, got tuples nested {depth} deep"));
        }
        self.stack.push(Value::Tuple(Rc::from(items), depth));
        Ok(())
    }

    fn put(&mut self, k: u32) -> Result<(), String> {
        let top = self.stack.last().cloned().ok_or("expected a value to memoize")?;
        self.memo.insert(k, top);
        Ok(())
    }

    fn get(&mut self, k: u32) -> Result<(), String> {
        let v = self.memo.get(&k).cloned().ok_or_else(|| format!("expected memo entry {k} to exist"))?;
        self.stack.push(v);
        Ok(())
    }
}

fn kind(v: &Value) -> String {
    match v {
        Value::None => "None".into(),
        Value::Bool => "a bool".into(),
        Value::Int(_) => "an int".into(),
        Value::Float => "a float".into(),
        Value::Str(_) => "a string".into(),
        Value::Global(g) => format!("{}.{}", g.0, g.1),
        Value::Tuple(..) => "a tuple".into(),
        Value::Dict { .. } => "a dict".into(),
        Value::Storage(_) => "a storage".into(),
        Value::Tensor(_) => "a tensor".into(),
    }
}

/// The dtype of a legacy typed storage class (`torch.FloatStorage`, ...).
fn storage_class_dtype(name: &str) -> Option<TDType> {
    Some(match name {
        "HalfStorage" => TDType::F16,
        "BFloat16Storage" => TDType::BF16,
        "FloatStorage" => TDType::F32,
        "DoubleStorage" => TDType::F64,
        "CharStorage" => TDType::I8,
        "ShortStorage" => TDType::I16,
        "IntStorage" => TDType::I32,
        "LongStorage" => TDType::I64,
        "ByteStorage" => TDType::U8,
        "BoolStorage" => TDType::Bool,
        _ => return None,
    })
}

/// A computable torch dtype by its attribute name (`float32`, `half`).
fn torch_dtype(name: &str) -> Option<TDType> {
    TDType::parse(name).filter(|d| d.is_computable())
}

/// `('storage', StorageClass, key, location, numel)` to a storage reference.
fn persistent_storage(pid: &Value) -> Result<StorageRef, String> {
    let bad = || format!("expected a persistent id ('storage', StorageClass, key, location, numel), got {}", kind(pid));
    let Value::Tuple(items, _) = pid else { return Err(bad()) };
    let [Value::Str(tag), Value::Global(class), Value::Str(key), _location, Value::Int(len)] = &items[..] else { return Err(bad()) };
    if &**tag != "storage" {
        return Err(bad());
    }
    let dtype = match (class.0.as_str(), class.1.as_str()) {
        ("torch", name) if storage_class_dtype(name).is_some() => storage_class_dtype(name),
        ("torch.storage" | "torch", "UntypedStorage") => None,
        (m, n) => return Err(format!("expected a storage class of a supported dtype, got {m}.{n}")),
    };
    let len = u64::try_from(*len).map_err(|_| format!("expected a non-negative storage size, got {len}"))?;
    Ok(StorageRef { key: key.to_string(), dtype, len })
}

/// Applies the few callables a tensor pickle uses.
fn reduce(func: &Value, args: &Value) -> Result<Value, String> {
    let Value::Global(g) = func else { return Err(format!("expected a callable, got {}", kind(func))) };
    let Value::Tuple(args, _) = args else { return Err(format!("expected an argument tuple for {}.{}", g.0, g.1)) };
    match (g.0.as_str(), g.1.as_str()) {
        ("collections", "OrderedDict") if args.is_empty() => Ok(Value::Dict { nonempty: false }),
        ("torch._utils", "_rebuild_tensor_v2") => rebuild(args, None),
        ("torch._utils", "_rebuild_tensor_v3") => match args.get(6) {
            Some(Value::Global(d)) if d.0 == "torch" => match torch_dtype(&d.1) {
                Some(dtype) => rebuild(args, Some(dtype)),
                None => Err(format!("expected a tensor of a supported dtype, got torch.{}", d.1)),
            },
            _ => Err("expected a torch dtype as the 7th argument of _rebuild_tensor_v3".into()),
        },
        (m, n) => Err(format!("expected torch._utils._rebuild_tensor_v2 (a bare tensor saved by torch.save), got a call of {m}.{n}")),
    }
}

/// `_rebuild_tensor_v2/v3(storage, offset, size, stride, requires_grad, hooks, [dtype,] [metadata])`.
fn rebuild(args: &[Value], v3_dtype: Option<TDType>) -> Result<Value, String> {
    let [Value::Storage(storage), Value::Int(offset), Value::Tuple(size, _), Value::Tuple(stride, _), Value::Bool, Value::Dict { .. }, rest @ ..] = args else {
        return Err("expected the arguments (storage, storage_offset, size, stride, requires_grad, backward_hooks) for the tensor".into());
    };
    let metadata = if v3_dtype.is_some() { rest.get(1) } else { rest.first() };
    if matches!(metadata, Some(Value::Dict { nonempty: true })) {
        return Err("expected a tensor without conj/neg metadata, got tensor metadata".into());
    }
    let (dtype, storage_len) = match (storage.dtype, v3_dtype) {
        (Some(d), None) => (d, storage.len),
        (Some(d), Some(v)) if d == v => (d, storage.len),
        (None, Some(d)) => (d, storage.len / d.itemsize() as u64),
        _ => return Err("expected the storage class to match the tensor dtype".into()),
    };
    let dims = |t: &[Value], what: &str| {
        t.iter()
            .map(|v| match v {
                Value::Int(n) => u64::try_from(*n).map_err(|_| format!("expected non-negative {what}, got {n}")),
                other => Err(format!("expected integer {what}, got {}", kind(other))),
            })
            .collect::<Result<Vec<u64>, String>>()
    };
    let size = dims(size, "sizes")?;
    let stride = dims(stride, "strides")?;
    if size.len() != stride.len() {
        return Err(format!("expected as many strides as dims, got size {size:?} and stride {stride:?}"));
    }
    let offset = u64::try_from(*offset).map_err(|_| format!("expected a non-negative storage offset, got {offset}"))?;
    Ok(Value::Tensor(Rc::new(TensorRecord { key: storage.key.clone(), dtype, storage_len, offset, size, stride })))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pickle torch 2.15 writes for `torch.save(torch.zeros(3, 4).t())`.
    fn transposed() -> Vec<u8> {
        b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nq\x00((X\x07\x00\x00\x00storageq\x01ctorch\nFloatStorage\nq\x02X\x01\x00\x00\x000q\x03X\x03\x00\x00\x00cpuq\x04K\x0ctq\x05QK\x00K\x04K\x03\x86q\x06K\x01K\x04\x86q\x07\x89ccollections\nOrderedDict\nq\x08)Rq\ttq\nRq\x0b.".to_vec()
    }

    #[test]
    fn reads_the_torch_tensor_pickle() {
        let t = load_tensor(&transposed()).unwrap();
        assert_eq!((t.dtype, t.storage_len, t.offset), (TDType::F32, 12, 0));
        assert_eq!((t.size, t.stride, t.key), (vec![4, 3], vec![1, 4], "0".to_string()));
    }

    #[test]
    fn every_truncation_is_an_error() {
        let p = transposed();
        for n in 0..p.len() {
            assert!(load_tensor(&p[..n]).is_err(), "prefix of {n} bytes");
        }
    }

    #[test]
    fn rejects_other_callables_and_deep_nesting() {
        let evil = b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00ls\x85R.";
        assert!(load_tensor(evil).unwrap_err().contains("os.system"));
        let mut deep = b"\x80\x02K\x01".to_vec();
        deep.extend(std::iter::repeat_n(0x85, 100));
        deep.push(b'.');
        assert!(load_tensor(&deep).unwrap_err().contains("nested"));
        assert!(load_tensor(b"\x80\x02K\x01.").unwrap_err().contains("an int"));
        assert!(load_tensor(b"\x80\x02\xff").unwrap_err().contains("0xff"));
    }

    #[test]
    fn long1_is_twos_complement() {
        let mut vm = Machine { pkl: &[0xff, 0xff, 0x7f], pos: 0, stack: vec![], marks: vec![], memo: HashMap::new() };
        assert_eq!(vm.long(3).unwrap(), 0x7fffff);
        let mut vm = Machine { pkl: &[0x00, 0x80], pos: 0, stack: vec![], marks: vec![], memo: HashMap::new() };
        assert_eq!(vm.long(2).unwrap(), -32768);
    }
}
