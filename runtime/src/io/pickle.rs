//! The one pickle interpreter of msprobe-rs. It never executes code: a
//! callable found in the pickle is either one of the few it implements
//! (building a tensor, an OrderedDict, bytes) or, where the mode allows it,
//! an inert placeholder object; anything else is refused by name.
//!
//! Two modes ([`Mode`]):
//! - **Tensor**: exactly what `torch.save(tensor)` writes: the call
//!   `torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
//!   requires_grad, OrderedDict())` (or `_rebuild_tensor_v3(..., dtype)` for
//!   the unsigned dtypes torch 2 added), whose storage is a persistent id
//!   `('storage', StorageClass, key, location, numel)`. Any other callable,
//!   and the opcodes of lists, objects and state, are rejected.
//! - **Checkpoint**: a whole `torch.save(dict)` such as Megatron's
//!   `model_optim_rng.pt`: dicts, lists, sets, `argparse.Namespace`, enums,
//!   numpy RNG state and `io.BytesIO` are built as data. A global off the
//!   allowlist ([`allowed`]) outside the tensors (a class of the user's
//!   training script in `args`, an enum) is only a name:
//!   calling it (REDUCE, NEWOBJ, OBJ, INST) makes an inert placeholder
//!   holding its state, as for the allowlisted classes that are not
//!   implemented; nothing is imported or called. What builds a tensor or a
//!   storage must be on the allowlist: a storage class, a tensor subclass or
//!   rebuild function, or any call of a `torch` global off it, refuses the
//!   file by the global's name ([`Machine::inert`]). A global that runs
//!   code (`os.system`, `builtins.eval`, `subprocess.Popen`, [`runs_code`])
//!   refuses the file the moment it is named, wherever it is.
//!
//! Memory is bounded by the pickle's length: every opcode creates at most a
//! few values, and containers live in an arena indexed by number, so that
//! self-references make no reference cycles and drops never recurse deeply.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::dtype::TDType;

/// Deeper nesting of tuples is not a tensor pickle (and would make drops recurse).
const MAX_DEPTH: u8 = 16;

/// Dict nesting followed when listing a checkpoint's tensors.
const MAX_KEY_DEPTH: usize = 64;

/// What a pickle may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// A bare tensor (`torch.save(tensor)`), nothing else.
    Tensor,
    /// Any object tree; tensors only of allowlisted classes.
    Checkpoint,
}

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

/// A scalar of a checkpoint's object tree (`args.tensor_model_parallel_size`).
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// `None`.
    None,
    /// A bool.
    Bool(bool),
    /// An int that fits in 64 bits.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
}

/// What a checkpoint pickle holds, flattened: every tensor and scalar
/// reachable from the root through dicts and the `__dict__` state of
/// placeholder objects (an `argparse.Namespace`), by its key path joined
/// with `.` (`model.decoder.layers.0.mlp.linear_fc1.weight`, `args.swiglu`),
/// in pickle order. Lists and tuples are not entered.
#[derive(Debug, Default)]
pub(super) struct Tree {
    /// Tensor leaves.
    pub tensors: Vec<(String, TensorRecord)>,
    /// Scalar leaves.
    pub scalars: Vec<(String, Scalar)>,
}

#[derive(Debug, Clone)]
enum Value {
    None,
    Bool(bool),
    Int(i64),
    /// An int too large for 64 bits (seeds, RNG state).
    BigInt,
    Float(f64),
    Str(Rc<str>),
    Bytes,
    Global(Rc<(String, String)>),
    Tuple(Rc<[Value]>, u8),
    /// A list, dict or object in the arena.
    Obj(usize),
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

/// A mutable container of the arena.
#[derive(Debug)]
enum Obj {
    /// A list, set or frozenset.
    List(Vec<Value>),
    /// A dict or OrderedDict, in insertion order.
    Dict(Vec<(Value, Value)>),
    /// An instance of a class that is not implemented (allowlisted or
    /// not): never called; its `BUILD` state is kept (a Namespace's
    /// `__dict__`), and so are the items set on it (a `defaultdict`, a
    /// training script's dict subclass holding a state dict).
    Placeholder { class: Rc<(String, String)>, state: Value, items: Vec<(Value, Value)> },
}

/// Runs the pickle in [`Mode::Tensor`] and returns the tensor it builds.
pub(super) fn load_tensor(pkl: &[u8]) -> Result<TensorRecord, String> {
    let mut vm = Machine::new(pkl, Mode::Tensor);
    match vm.run()? {
        Value::Tensor(t) => Ok(Rc::unwrap_or_clone(t)),
        other => Err(format!("expected a pickled bare tensor (torch.save(tensor)), got {}", vm.kind(&other))),
    }
}

/// Runs the pickle in [`Mode::Checkpoint`] and flattens what it builds.
pub(super) fn load_tree(pkl: &[u8]) -> Result<Tree, String> {
    let mut vm = Machine::new(pkl, Mode::Checkpoint);
    let root = vm.run()?;
    let mut tree = Tree::default();
    let mut seen = HashSet::new();
    vm.flatten(&root, &mut String::new(), 0, &mut seen, &mut tree);
    Ok(tree)
}

struct Machine<'a> {
    pkl: &'a [u8],
    pos: usize,
    mode: Mode,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: HashMap<u32, Value>,
    arena: Vec<Obj>,
}

impl<'a> Machine<'a> {
    fn new(pkl: &'a [u8], mode: Mode) -> Self {
        Machine { pkl, pos: 0, mode, stack: Vec::new(), marks: Vec::new(), memo: HashMap::new(), arena: Vec::new() }
    }

    /// Runs the opcodes until STOP and returns the value it pops. Each
    /// opcode is handled by one of the themed helpers below; one none of
    /// them knows refuses the pickle.
    fn run(&mut self) -> Result<Value, String> {
        loop {
            let at = self.pos;
            let op = self.bytes(1)?[0];
            if self.mode == Mode::Checkpoint && self.data_op(op, at)? {
                continue;
            }
            if op == b'.' {
                return self.pop(); // STOP
            }
            let done = self.literal_op(op)? || self.name_op(op, at)? || self.tuple_dict_op(op, at)? || self.call_op(op)?;
            if !done {
                return Err(format!("expected a tensor pickle, found unsupported opcode 0x{op:02x} at pickle offset {at}"));
            }
        }
    }

    /// The framing opcodes, MARK and the binary literals (None, bools, ints,
    /// floats, strings) both modes read; false for the others.
    fn literal_op(&mut self, op: u8) -> Result<bool, String> {
        match op {
            0x80 => {
                self.bytes(1)?; // PROTO
            }
            0x95 => {
                self.bytes(8)?; // FRAME
            }
            b'(' => self.marks.push(self.stack.len()),
            b'N' => self.stack.push(Value::None),
            0x88 | 0x89 => self.stack.push(Value::Bool(op == 0x88)), // NEWTRUE, NEWFALSE
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
                self.stack.push(v);
            }
            b'G' => {
                let v = f64::from_be_bytes(self.array()?);
                self.stack.push(Value::Float(v));
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
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The opcodes that name a value both modes read: globals (GLOBAL,
    /// STACK_GLOBAL) and the binary memo (PUT, GET and MEMOIZE); false for
    /// the others.
    fn name_op(&mut self, op: u8, at: usize) -> Result<bool, String> {
        match op {
            b'c' => {
                let module = self.line()?;
                let name = self.line()?;
                let g = self.global(module, name)?;
                self.stack.push(g);
            }
            0x93 => {
                let name = self.pop()?;
                let module = self.pop()?;
                match (module, name) {
                    (Value::Str(m), Value::Str(n)) => {
                        let g = self.global(m.to_string(), n.to_string())?;
                        self.stack.push(g);
                    }
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
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The tuple and dict opcodes both modes read (a tensor's size and
    /// stride, its hooks' `OrderedDict`); false for the others.
    fn tuple_dict_op(&mut self, op: u8, at: usize) -> Result<bool, String> {
        match op {
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
            b'}' => {
                let d = self.alloc(Obj::Dict(Vec::new()));
                self.stack.push(d);
            }
            b's' | b'u' => {
                let items = if op == b's' { self.stack.split_off(self.stack.len().saturating_sub(2)) } else { self.pop_mark()? };
                let entries = match self.top_obj() {
                    // A dict subclass built by REDUCE or NEWOBJ (a
                    // defaultdict, a framework's or the user's own mapping).
                    Some(Obj::Dict(entries) | Obj::Placeholder { items: entries, .. }) => entries,
                    _ => return Err(format!("expected a dict to set items on at pickle offset {at}")),
                };
                let mut items = items.into_iter();
                while let (Some(k), Some(v)) = (items.next(), items.next()) {
                    entries.push((k, v));
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The opcodes that build a storage (BINPERSID) or call a global
    /// (REDUCE), both modes; false for the others.
    fn call_op(&mut self, op: u8) -> Result<bool, String> {
        match op {
            b'Q' => {
                let pid = self.pop()?;
                let storage = self.persistent_storage(&pid)?;
                self.stack.push(storage);
            }
            b'R' => {
                let args = self.pop()?;
                let func = self.pop()?;
                let value = self.reduce(&func, &args)?;
                self.stack.push(value);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The opcodes only [`Mode::Checkpoint`] runs; false for the others.
    fn data_op(&mut self, op: u8, at: usize) -> Result<bool, String> {
        Ok(self.collection_op(op, at)? || self.stack_op(op, at)? || self.text_literal_op(op, at)? || self.object_op(op, at)?)
    }

    /// [`Self::data_op`]'s lists, sets and dicts, and appending to them.
    fn collection_op(&mut self, op: u8, at: usize) -> Result<bool, String> {
        match op {
            b']' => {
                let l = self.alloc(Obj::List(Vec::new()));
                self.stack.push(l);
            }
            0x8f => {
                let l = self.alloc(Obj::List(Vec::new())); // EMPTY_SET
                self.stack.push(l);
            }
            b'l' | 0x91 => {
                let items = self.pop_mark()?; // LIST, FROZENSET
                let l = self.alloc(Obj::List(items));
                self.stack.push(l);
            }
            b'd' => {
                let items = self.pop_mark()?;
                let mut entries = Vec::with_capacity(items.len() / 2);
                let mut items = items.into_iter();
                while let (Some(k), Some(v)) = (items.next(), items.next()) {
                    entries.push((k, v));
                }
                let d = self.alloc(Obj::Dict(entries));
                self.stack.push(d);
            }
            b'a' | b'e' | 0x90 => {
                let items = if op == b'a' { vec![self.pop()?] } else { self.pop_mark()? }; // APPEND, APPENDS, ADDITEMS
                match self.top_obj() {
                    Some(Obj::List(list)) => list.extend(items),
                    // Appending to a placeholder (a deque, a custom list): dropped.
                    Some(Obj::Placeholder { .. }) => {}
                    _ => return Err(format!("expected a list to append to at pickle offset {at}")),
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// [`Self::data_op`]'s stack moves (POP, POP_MARK, DUP) and the text memo (GET, PUT).
    fn stack_op(&mut self, op: u8, at: usize) -> Result<bool, String> {
        match op {
            b'0' => {
                self.pop()?; // POP
            }
            b'1' => {
                self.pop_mark()?; // POP_MARK
            }
            b'2' => {
                let top = self.stack.last().cloned().ok_or_else(|| format!("expected a value to duplicate at pickle offset {at}"))?;
                self.stack.push(top);
            }
            b'g' | b'p' => {
                let line = self.line()?; // GET, PUT with a decimal key
                let k = line.parse().map_err(|_| format!("expected a decimal memo key at pickle offset {at}"))?;
                if op == b'g' {
                    self.get(k)?;
                } else {
                    self.put(k)?;
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// [`Self::data_op`]'s literals of the older protocols (text ints,
    /// floats and strings), bytes, and LONG4.
    fn text_literal_op(&mut self, op: u8, at: usize) -> Result<bool, String> {
        match op {
            b'I' | b'L' => {
                let line = self.line()?; // INT, LONG as text
                let digits = line.trim_end_matches('L');
                self.stack.push(match digits {
                    "00" => Value::Bool(false),
                    "01" => Value::Bool(true),
                    d => d.parse().map(Value::Int).unwrap_or(Value::BigInt),
                });
            }
            b'F' => {
                let line = self.line()?;
                self.stack.push(Value::Float(line.trim().parse().unwrap_or(f64::NAN)));
            }
            b'V' | b'S' => {
                let line = self.line()?; // UNICODE, STRING: text, escapes left as they are
                self.stack.push(Value::Str(Rc::from(line)));
            }
            b'T' | b'B' => {
                let n = u32::from_le_bytes(self.array()?) as usize; // BINSTRING, BINBYTES
                self.bytes(n)?;
                self.stack.push(Value::Bytes);
            }
            b'U' | b'C' => {
                let n = usize::from(self.bytes(1)?[0]); // SHORT_BINSTRING, SHORT_BINBYTES
                self.bytes(n)?;
                self.stack.push(Value::Bytes);
            }
            0x8e | 0x96 => {
                let n = usize::try_from(u64::from_le_bytes(self.array()?)).unwrap_or(usize::MAX); // BINBYTES8, BYTEARRAY8
                self.bytes(n)?;
                self.stack.push(Value::Bytes);
            }
            0x8b => {
                let n = i32::from_le_bytes(self.array()?); // LONG4
                let n = usize::try_from(n).map_err(|_| format!("expected a non-negative LONG4 length at pickle offset {at}"))?;
                let v = self.long(n)?;
                self.stack.push(v);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// [`Self::data_op`]'s objects: instantiating a class (NEWOBJ,
    /// NEWOBJ_EX, INST, OBJ) makes a placeholder, and BUILD sets its state.
    fn object_op(&mut self, op: u8, at: usize) -> Result<bool, String> {
        match op {
            0x81 | 0x92 => {
                if op == 0x92 {
                    self.pop()?; // NEWOBJ_EX's kwargs
                }
                let _args = self.pop()?;
                let class = self.pop()?;
                let obj = self.placeholder(&class, at)?;
                self.stack.push(obj);
            }
            b'i' => {
                let module = self.line()?; // INST
                let name = self.line()?;
                self.pop_mark()?;
                let obj = self.inert(Rc::new((module, name)))?;
                self.stack.push(obj);
            }
            b'o' => {
                let mut items = self.pop_mark()?; // OBJ: class, args...
                if items.is_empty() {
                    return Err(format!("expected a class for OBJ at pickle offset {at}"));
                }
                let class = items.swap_remove(0);
                let obj = self.placeholder(&class, at)?;
                self.stack.push(obj);
            }
            b'b' => {
                let state = self.pop()?;
                let target = match self.stack.last() {
                    Some(Value::Obj(i)) => Some(*i),
                    Some(_) => None,
                    None => return Err(format!("expected an object to BUILD at pickle offset {at}")),
                };
                // State of a tensor, storage or dict subclass is not needed.
                if let Some(Obj::Placeholder { state: s, .. }) = target.and_then(|i| self.arena.get_mut(i)) {
                    *s = state;
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn alloc(&mut self, obj: Obj) -> Value {
        self.arena.push(obj);
        Value::Obj(self.arena.len() - 1)
    }

    fn top_obj(&mut self) -> Option<&mut Obj> {
        match self.stack.last() {
            Some(Value::Obj(i)) => self.arena.get_mut(*i),
            _ => None,
        }
    }

    fn placeholder(&mut self, class: &Value, at: usize) -> Result<Value, String> {
        match class {
            Value::Global(g) => self.inert(g.clone()),
            other => Err(format!("expected a class to instantiate at pickle offset {at}, got {}", self.kind(other))),
        }
    }

    /// A call of `class` in [`Mode::Checkpoint`] that is not implemented:
    /// an inert placeholder, never called, whether allowlisted or not;
    /// except a `torch` global off the allowlist, which may build a tensor
    /// this reader cannot read (a quantized or sparse tensor, a module).
    fn inert(&mut self, class: Rc<(String, String)>) -> Result<Value, String> {
        let (module, name) = (&class.0, &class.1);
        if (module == "torch" || module.starts_with("torch.")) && !allowed(module, name) {
            return Err(refused(module, name));
        }
        Ok(self.alloc(Obj::Placeholder { class, state: Value::None, items: Vec::new() }))
    }

    /// A named global. Naming runs nothing, so any is accepted, but one
    /// that runs code ([`runs_code`]) in [`Mode::Checkpoint`]: a pickle
    /// naming it is hostile, and is refused whole; what a call or a tensor
    /// may use is decided there ([`Self::reduce`], [`Self::inert`]).
    fn global(&self, module: String, name: String) -> Result<Value, String> {
        if self.mode == Mode::Checkpoint && runs_code(&module, &name) {
            return Err(format!(
                "refused the global {module}.{name}: not on the allowlist of data-only classes (the pickle could run code; it is never executed)"
            ));
        }
        Ok(Value::Global(Rc::new((module, name))))
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

    /// A little-endian two's-complement int of `n` bytes; wider than 8
    /// bytes is a [`Value::BigInt`] in [`Mode::Checkpoint`], an error otherwise.
    fn long(&mut self, n: usize) -> Result<Value, String> {
        if n > 8 {
            if self.mode == Mode::Checkpoint {
                self.bytes(n)?;
                return Ok(Value::BigInt);
            }
            return Err(format!("expected an integer of at most 8 bytes, got {n} bytes"));
        }
        let b = self.bytes(n)?;
        let negative = b.last().is_some_and(|&x| x & 0x80 != 0);
        let mut full = [if negative { 0xff } else { 0 }; 8];
        full[..n].copy_from_slice(b);
        Ok(Value::Int(i64::from_le_bytes(full)))
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

    fn kind(&self, v: &Value) -> String {
        match v {
            Value::None => "None".into(),
            Value::Bool(_) => "a bool".into(),
            Value::Int(_) | Value::BigInt => "an int".into(),
            Value::Float(_) => "a float".into(),
            Value::Str(_) => "a string".into(),
            Value::Bytes => "bytes".into(),
            Value::Global(g) => format!("{}.{}", g.0, g.1),
            Value::Tuple(..) => "a tuple".into(),
            Value::Obj(i) => match self.arena.get(*i) {
                Some(Obj::List(_)) => "a list".into(),
                Some(Obj::Dict(_)) => "a dict".into(),
                Some(Obj::Placeholder { class, .. }) => format!("a {}.{} object", class.0, class.1),
                None => "an object".into(),
            },
            Value::Storage(_) => "a storage".into(),
            Value::Tensor(_) => "a tensor".into(),
        }
    }

    fn is_dict(&self, v: &Value) -> bool {
        matches!(v, Value::Obj(i) if matches!(self.arena.get(*i), Some(Obj::Dict(_))))
    }

    fn is_nonempty_dict(&self, v: &Value) -> bool {
        matches!(v, Value::Obj(i) if matches!(self.arena.get(*i), Some(Obj::Dict(e)) if !e.is_empty()))
    }

    /// `('storage', StorageClass, key, location, numel)` to a storage reference.
    fn persistent_storage(&self, pid: &Value) -> Result<Value, String> {
        let bad = || format!("expected a persistent id ('storage', StorageClass, key, location, numel), got {}", self.kind(pid));
        let Value::Tuple(items, _) = pid else { return Err(bad()) };
        let [Value::Str(tag), Value::Global(class), Value::Str(key), _location, Value::Int(len)] = &items[..] else { return Err(bad()) };
        if &**tag != "storage" {
            return Err(bad());
        }
        let dtype = match (class.0.as_str(), class.1.as_str()) {
            ("torch", name) if storage_class_dtype(name).is_some() => storage_class_dtype(name),
            ("torch.storage" | "torch", "UntypedStorage") => None,
            (m, n) if !allowed(m, n) => return Err(refused(m, n)),
            (m, n) => return Err(format!("expected a storage class of a supported dtype, got {m}.{n}")),
        };
        let len = u64::try_from(*len).map_err(|_| format!("expected a non-negative storage size, got {len}"))?;
        Ok(Value::Storage(Rc::new(StorageRef { key: key.to_string(), dtype, len })))
    }

    /// Applies the few callables a pickle may use; in [`Mode::Checkpoint`]
    /// the other (allowlisted) ones make placeholders and are never called.
    fn reduce(&mut self, func: &Value, args: &Value) -> Result<Value, String> {
        let Value::Global(g) = func else { return Err(format!("expected a callable, got {}", self.kind(func))) };
        let Value::Tuple(args, _) = args else { return Err(format!("expected an argument tuple for {}.{}", g.0, g.1)) };
        match (g.0.as_str(), g.1.as_str()) {
            ("collections", "OrderedDict") if args.is_empty() => Ok(self.alloc(Obj::Dict(Vec::new()))),
            ("torch._utils", "_rebuild_tensor_v2") => self.rebuild(args, None),
            ("torch._utils", "_rebuild_tensor_v3") => match args.get(6) {
                Some(Value::Global(d)) if d.0 == "torch" => match torch_dtype(&d.1) {
                    Some(dtype) => self.rebuild(args, Some(dtype)),
                    None => Err(format!("expected a tensor of a supported dtype, got torch.{}", d.1)),
                },
                _ => Err("expected a torch dtype as the 7th argument of _rebuild_tensor_v3".into()),
            },
            (m, n) if self.mode == Mode::Tensor => {
                Err(format!("expected torch._utils._rebuild_tensor_v2 (a bare tensor saved by torch.save), got a call of {m}.{n}"))
            }
            // nn.Parameter(tensor, requires_grad, hooks[, state]): the tensor.
            ("torch._utils", "_rebuild_parameter" | "_rebuild_parameter_with_state") => match args.first() {
                Some(t @ Value::Tensor(_)) => Ok(t.clone()),
                _ => Err("expected a tensor as the first argument of _rebuild_parameter".into()),
            },
            // A tensor subclass: (rebuild function, type, its arguments, state).
            ("torch._tensor", "_rebuild_from_type_v2") => match (args.first(), args.get(1), args.get(2)) {
                (_, Some(Value::Global(class)), _) if !allowed(&class.0, &class.1) => Err(refused(&class.0, &class.1)),
                (Some(Value::Global(f)), _, _) if !allowed(&f.0, &f.1) => Err(refused(&f.0, &f.1)),
                (Some(f), _, Some(inner)) => {
                    let (f, inner) = (f.clone(), inner.clone());
                    self.reduce(&f, &inner)
                }
                _ => Err("expected (function, type, args, state) for _rebuild_from_type_v2".into()),
            },
            ("_codecs", "encode") => Ok(Value::Bytes),
            _ => self.inert(g.clone()),
        }
    }

    /// `_rebuild_tensor_v2/v3(storage, offset, size, stride, requires_grad, hooks, [dtype,] [metadata])`.
    fn rebuild(&self, args: &[Value], v3_dtype: Option<TDType>) -> Result<Value, String> {
        let [Value::Storage(storage), Value::Int(offset), Value::Tuple(size, _), Value::Tuple(stride, _), Value::Bool(_), hooks, rest @ ..] = args else {
            return Err("expected the arguments (storage, storage_offset, size, stride, requires_grad, backward_hooks) for the tensor".into());
        };
        if !self.is_dict(hooks) {
            return Err("expected the arguments (storage, storage_offset, size, stride, requires_grad, backward_hooks) for the tensor".into());
        }
        let metadata = if v3_dtype.is_some() { rest.get(1) } else { rest.first() };
        if metadata.is_some_and(|m| self.is_nonempty_dict(m)) {
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
                    other => Err(format!("expected integer {what}, got {}", self.kind(other))),
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

    /// Adds the leaves under `v` (at key path `path`) to `tree`. Each
    /// container is entered once (`seen`), so a pickle whose dicts share
    /// children cannot make the walk exponential.
    fn flatten(&self, v: &Value, path: &mut String, depth: usize, seen: &mut HashSet<usize>, tree: &mut Tree) {
        let scalar = match v {
            Value::Tensor(t) => {
                tree.tensors.push((path.clone(), (**t).clone()));
                return;
            }
            Value::None => Scalar::None,
            Value::Bool(b) => Scalar::Bool(*b),
            Value::Int(i) => Scalar::Int(*i),
            Value::Float(f) => Scalar::Float(*f),
            Value::Str(s) => Scalar::Str(s.to_string()),
            Value::Obj(i) if depth < MAX_KEY_DEPTH && seen.insert(*i) => {
                match self.arena.get(*i) {
                    Some(Obj::Dict(entries)) => self.flatten_entries(entries, path, depth, seen, tree),
                    Some(Obj::Placeholder { state, items, .. }) => {
                        if let Value::Obj(_) = state {
                            self.flatten(state, path, depth + 1, seen, tree);
                        }
                        self.flatten_entries(items, path, depth, seen, tree);
                    }
                    _ => {}
                }
                return;
            }
            _ => return,
        };
        if !path.is_empty() {
            tree.scalars.push((path.clone(), scalar));
        }
    }

    /// [`Self::flatten`] of a mapping's entries with string or int keys, each at `path.key`.
    fn flatten_entries(&self, entries: &[(Value, Value)], path: &mut String, depth: usize, seen: &mut HashSet<usize>, tree: &mut Tree) {
        for (k, child) in entries {
            let key = match k {
                Value::Str(s) => s.to_string(),
                Value::Int(n) => n.to_string(),
                _ => continue,
            };
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&key);
            self.flatten(child, path, depth + 1, seen, tree);
            path.truncate(len);
        }
    }
}

/// Why a checkpoint is refused: a tensor or storage needs `module.name`,
/// which is off the allowlist.
fn refused(module: &str, name: &str) -> String {
    format!(
        "refused the global {module}.{name}: a tensor or storage needs it, and it is not on the allowlist of data-only classes (the pickle is never executed)"
    )
}

/// The known globals of a checkpoint pickle: classes and functions that
/// build data, and the configuration and enum classes of the frameworks
/// that write Megatron checkpoints. None of them is ever called (see the
/// module doc). Any other global (a user's class, `functools.partial`,
/// ...) is an inert placeholder outside the tensors and refuses the file
/// inside one; one that runs code ([`runs_code`]) refuses it when named.
fn allowed(module: &str, name: &str) -> bool {
    let under = |root: &str| module == root || module.strip_prefix(root).is_some_and(|rest| rest.starts_with('.'));
    match module {
        "collections" => matches!(name, "OrderedDict" | "defaultdict" | "deque" | "Counter"),
        "argparse" => name == "Namespace",
        "types" => name == "SimpleNamespace",
        "io" | "_io" => name == "BytesIO",
        "_codecs" => name == "encode",
        // Types only, named as a defaultdict's factory or a REDUCE's class.
        "builtins" | "__builtin__" => matches!(
            name,
            "set"
                | "frozenset"
                | "bytearray"
                | "bytes"
                | "slice"
                | "complex"
                | "range"
                | "list"
                | "dict"
                | "int"
                | "float"
                | "str"
                | "tuple"
                | "bool"
                | "object"
        ),
        "datetime" => matches!(name, "timedelta" | "datetime" | "date" | "time" | "timezone"),
        "pathlib" => matches!(name, "Path" | "PosixPath" | "WindowsPath" | "PurePath" | "PurePosixPath" | "PureWindowsPath"),
        "numpy" => matches!(name, "ndarray" | "dtype") || numpy_scalar_type(name),
        "numpy.dtypes" => name.ends_with("DType"),
        "numpy.core.multiarray" | "numpy._core.multiarray" => matches!(name, "_reconstruct" | "scalar"),
        "numpy.random._pickle" => matches!(name, "__randomstate_ctor" | "__bit_generator_ctor" | "__generator_ctor"),
        "torch" => storage_class_dtype(name).is_some() || TDType::parse(name).is_some() || torch_value_class(name),
        "torch._utils" => matches!(name, "_rebuild_tensor_v2" | "_rebuild_tensor_v3" | "_rebuild_parameter" | "_rebuild_parameter_with_state"),
        "torch._tensor" => name == "_rebuild_from_type_v2",
        "torch.storage" => name == "UntypedStorage",
        "torch.nn.parameter" => name == "Parameter",
        _ => ["megatron", "mindspeed", "mindspeed_llm", "modellink"].iter().any(|root| under(root)),
    }
}

/// Globals whose only use in a pickle is to run code (a shell, a
/// subprocess, an evaluator, an importer, a file opener): a checkpoint that
/// names one is refused, although it would never be called here.
fn runs_code(module: &str, name: &str) -> bool {
    let root = module.split('.').next().unwrap_or(module);
    match root {
        "os" | "posix" | "nt" | "subprocess" | "sys" | "shutil" | "importlib" | "runpy" | "pty" | "socket" | "ctypes" | "code" | "codeop" | "pickle"
        | "_pickle" | "marshal" | "webbrowser" | "multiprocessing" | "signal" | "commands" | "popen2" => true,
        "builtins" | "__builtin__" => matches!(
            name,
            "eval"
                | "exec"
                | "compile"
                | "__import__"
                | "open"
                | "getattr"
                | "setattr"
                | "delattr"
                | "globals"
                | "locals"
                | "vars"
                | "input"
                | "breakpoint"
                | "exit"
                | "quit"
                | "help"
        ),
        _ => false,
    }
}

/// numpy's scalar types (`numpy.float32`), named by dtype objects.
fn numpy_scalar_type(name: &str) -> bool {
    let base = name.trim_end_matches('_');
    matches!(base, "bool" | "float16" | "float32" | "float64" | "int8" | "int16" | "int32" | "int64" | "uint8" | "uint16" | "uint32" | "uint64")
}

/// torch classes and constants an `args` object may hold as values.
fn torch_value_class(name: &str) -> bool {
    matches!(
        name,
        "Size" | "device" | "dtype" | "float8_e4m3fn" | "float8_e5m2" | "complex64" | "complex128" | "strided" | "contiguous_format" | "channels_last"
    )
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
        "ComplexFloatStorage" => TDType::C64,
        "ComplexDoubleStorage" => TDType::C128,
        _ => return None,
    })
}

/// A torch dtype by its attribute name (`float32`, `half`, `complex64`).
fn torch_dtype(name: &str) -> Option<TDType> {
    TDType::parse(name)
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
            assert!(load_tree(&p[..n]).is_err(), "prefix of {n} bytes");
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
        // The tensor mode runs no container opcodes.
        assert!(load_tensor(b"\x80\x02]q\x00.").unwrap_err().contains("unsupported opcode 0x5d"));
    }

    #[test]
    fn checkpoint_mode_refuses_globals_that_run_code_when_named() {
        for (pkl, name) in [
            (&b"\x80\x02cos\nsystem\n."[..], "os.system"),
            (b"cposix\nsystem\n(Vtouch PWNED\ntR.", "posix.system"),
            (b"\x80\x02cbuiltins\neval\nX\x01\x00\x00\x001\x85R.", "builtins.eval"),
            (b"\x80\x04\x8c\nsubprocess\x8c\x05Popen\x93\x8c\x05touch\x8c\x05PWNED\x86\x85R.", "subprocess.Popen"),
            (b"\x80\x02}(X\x01\x00\x00\x00acos.path\njoin\nu.", "os.path.join"),
        ] {
            let want = format!("refused the global {name}: not on the allowlist of data-only classes (the pickle could run code; it is never executed)");
            assert_eq!(load_tree(pkl).unwrap_err(), want);
        }
    }

    #[test]
    fn checkpoint_mode_keeps_unknown_globals_outside_tensors_inert() {
        // Named, called (REDUCE, INST, NEWOBJ) or a dict value: placeholders, nothing run.
        for pkl in [
            &b"\x80\x02}(X\x01\x00\x00\x00acfunctools\npartial\nu."[..],
            b"(i__main__\nHook\nX\x02\x00\x00\x00ls.",
            b"\x80\x02c__main__\nCfg\n)\x81}b.",
            b"\x80\x02chttp\nHTTPStatus\nK\xc8\x85R.",
        ] {
            let tree = load_tree(pkl).unwrap();
            assert!(tree.tensors.is_empty() && tree.scalars.is_empty(), "{tree:?}");
        }
        // pickle.dumps({'args': Namespace(tp=2, cfg=__main__.Cfg() with x=3 and name='run',
        // sched=__main__.Sched.cosine, status=http.HTTPStatus.OK), 'it': 1}, protocol=2)
        let p = b"\x80\x02}q\x00(X\x04\x00\x00\x00argsq\x01cargparse\nNamespace\nq\x02)\x81q\x03}q\x04(X\x02\x00\x00\x00tpq\x05K\x02X\x03\x00\x00\x00cfgq\x06c__main__\nCfg\nq\x07)\x81q\x08}q\t(X\x01\x00\x00\x00xq\nK\x03X\x04\x00\x00\x00nameq\x0bX\x03\x00\x00\x00runq\x0cubX\x05\x00\x00\x00schedq\rc__main__\nSched\nq\x0eK\x01\x85q\x0fRq\x10X\x06\x00\x00\x00statusq\x11chttp\nHTTPStatus\nq\x12K\xc8\x85q\x13Rq\x14ubX\x02\x00\x00\x00itq\x15K\x01u.";
        let scalars = load_tree(p).unwrap().scalars;
        let want = [("args.tp", Scalar::Int(2)), ("args.cfg.x", Scalar::Int(3)), ("args.cfg.name", Scalar::Str("run".into())), ("it", Scalar::Int(1))];
        assert_eq!(scalars, want.map(|(k, v)| (k.to_string(), v)));
    }

    #[test]
    fn checkpoint_mode_refuses_a_tensor_that_needs_an_unknown_global() {
        let t = transposed();
        let body = &t[2..t.len() - 1];
        let swap = |from: &[u8], to: &[u8]| {
            let at = t.windows(from.len()).position(|w| w == from).unwrap();
            [&t[..at], to, &t[at + from.len()..]].concat()
        };
        // A storage class, a tensor subclass, a rebuild function, a torch call off the allowlist.
        let subclass =
            [&b"\x80\x02ctorch._tensor\n_rebuild_from_type_v2\n(ctorch._utils\n_rebuild_tensor_v2\nc__main__\nTagged\n"[..], &body[..body.len() - 1], b"}tR."]
                .concat();
        let rebuild =
            [&b"\x80\x02ctorch._tensor\n_rebuild_from_type_v2\n(c__main__\nrebuild\nctorch.nn.parameter\nParameter\n"[..], &body[..body.len() - 1], b"}tR."]
                .concat();
        for (pkl, name) in [
            (swap(b"ctorch\nFloatStorage\n", b"c__main__\nEvilStorage\n"), "__main__.EvilStorage"),
            (subclass, "__main__.Tagged"),
            (rebuild, "__main__.rebuild"),
            (b"\x80\x02ctorch._utils\n_rebuild_qtensor\n)R.".to_vec(), "torch._utils._rebuild_qtensor"),
            (b"\x80\x02ctorch.nn.modules.linear\nLinear\n)\x81.".to_vec(), "torch.nn.modules.linear.Linear"),
        ] {
            assert_eq!(load_tree(&pkl).unwrap_err(), refused(name.rsplit_once('.').unwrap().0, name.rsplit_once('.').unwrap().1), "{name}");
        }
        assert_eq!(
            refused("__main__", "Tagged"),
            "refused the global __main__.Tagged: a tensor or storage needs it, and it is not on the allowlist of data-only classes (the pickle is never executed)"
        );
    }

    #[test]
    fn checkpoint_mode_flattens_dicts_and_namespaces() {
        // {'args': Namespace(tp=2, lr=0.5, dt=torch.bfloat16, mt=ModelType(1), big=2**70),
        //  'model': {'w': <transposed tensor>, 'x': BytesIO}, 'rng': [1, 2], 'it': 10}
        let mut p =
            b"\x80\x02}q\x00(X\x04\x00\x00\x00argscargparse\nNamespace\n)\x81}(X\x02\x00\x00\x00tpK\x02X\x02\x00\x00\x00lrG?\xe0\x00\x00\x00\x00\x00\x00"
                .to_vec();
        p.extend(b"X\x02\x00\x00\x00dtctorch\nbfloat16\nX\x02\x00\x00\x00mtcmegatron.core.enums\nModelType\nK\x01\x85RX\x03\x00\x00\x00big\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x40ub");
        p.extend(b"X\x05\x00\x00\x00model}(X\x01\x00\x00\x00w");
        let t = transposed();
        p.extend(&t[2..t.len() - 1]);
        p.extend(b"X\x01\x00\x00\x00xc_io\nBytesIO\n)\x81N\x85bu");
        p.extend(b"X\x03\x00\x00\x00rng](K\x01K\x02eX\x02\x00\x00\x00itK\nu.");
        let tree = load_tree(&p).unwrap();
        assert_eq!(tree.tensors.len(), 1);
        assert_eq!(tree.tensors[0].0, "model.w");
        assert_eq!(tree.tensors[0].1.size, vec![4, 3]);
        assert_eq!(tree.scalars, vec![("args.tp".into(), Scalar::Int(2)), ("args.lr".into(), Scalar::Float(0.5)), ("it".into(), Scalar::Int(10))]);
    }

    #[test]
    fn checkpoint_mode_reads_past_a_defaultdict() {
        // pickle.dumps({'d': defaultdict(list, x=[1]), 'it': 3}, protocol=2): REDUCE(defaultdict, (list,)), then SETITEM on it.
        let p = b"\x80\x02}q\x00(X\x01\x00\x00\x00dq\x01ccollections\ndefaultdict\nq\x02c__builtin__\nlist\nq\x03\x85q\x04Rq\x05X\x01\x00\x00\x00xq\x06]q\x07K\x01asX\x02\x00\x00\x00itq\x08K\x03u.";
        assert_eq!(load_tree(p).unwrap().scalars, vec![("it".into(), Scalar::Int(3))]);
    }

    #[test]
    fn items_set_on_a_placeholder_are_walked_as_a_dict() {
        // pickle.dumps({'m': __main__.SD(a=1), 'v': __main__.Vec([2]), 'dd': defaultdict(int, b=3)}, protocol=2),
        // with the model `{'w': <transposed tensor>}` set on a further __main__.SD.
        let mut p = b"\x80\x02}q\x00(X\x01\x00\x00\x00mq\x01c__main__\nSD\nq\x02)\x81q\x03X\x01\x00\x00\x00aq\x04K\x01sX\x01\x00\x00\x00vq\x05c__main__\nVec\nq\x06)\x81q\x07K\x02a".to_vec();
        p.extend(b"X\x02\x00\x00\x00ddq\x08ccollections\ndefaultdict\nq\tc__builtin__\nlong\nq\n\x85q\x0bRq\x0cX\x01\x00\x00\x00bq\rK\x03s");
        p.extend(b"X\x05\x00\x00\x00modelc__main__\nSD\n)\x81X\x01\x00\x00\x00w");
        let t = transposed();
        p.extend(&t[2..t.len() - 1]);
        p.extend(b"su.");
        let tree = load_tree(&p).unwrap();
        assert_eq!(tree.scalars, vec![("m.a".into(), Scalar::Int(1)), ("dd.b".into(), Scalar::Int(3))]);
        assert_eq!(tree.tensors.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["model.w"]);
    }

    #[test]
    fn shared_dicts_are_walked_once() {
        // d0 = {}; d1 = {'a': d0, 'b': d0}; ... 40 levels: 2^40 paths if walked naively.
        let mut p = b"\x80\x02}q\x00".to_vec();
        for i in 1..=40u8 {
            p.extend(b"}(X\x01\x00\x00\x00ah");
            p.push(i - 1);
            p.extend(b"X\x01\x00\x00\x00bh");
            p.push(i - 1);
            p.extend(b"uq");
            p.push(i);
        }
        p.push(b'.');
        assert!(load_tree(&p).unwrap().tensors.is_empty());
    }

    #[test]
    fn long1_is_twos_complement() {
        let mut vm = Machine::new(&[0xff, 0xff, 0x7f], Mode::Tensor);
        assert!(matches!(vm.long(3).unwrap(), Value::Int(0x7fffff)));
        let mut vm = Machine::new(&[0x00, 0x80], Mode::Tensor);
        assert!(matches!(vm.long(2).unwrap(), Value::Int(-32768)));
    }
}
