//! One sheet's table of cells, and the verdict levels config_check writes
//! in its cells.

/// A check's verdict, worst last (msprobe's `pass`, `warning`, `error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Nothing differs.
    Pass,
    /// Something is only on one side (env, hyperparameters).
    Warning,
    /// Something differs.
    Error,
}

impl Level {
    /// msprobe's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Pass => "pass",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }
}

/// One cell, written as pandas writes the value msprobe puts there.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// `None` or NaN: an empty cell.
    Empty,
    /// A string cell (never a formula).
    Text(String),
    /// An integer number cell.
    Int(i64),
    /// A float number cell (infinities become the text `inf` / `-inf`).
    Number(f64),
    /// A boolean cell.
    Bool(bool),
}

impl Cell {
    /// A string cell.
    pub fn text(s: &str) -> Cell {
        Cell::Text(s.to_string())
    }

    /// A level's cell.
    pub fn level(level: Level) -> Cell {
        Cell::text(level.as_str())
    }

    /// A float, or an empty cell for `None`.
    pub fn number(x: Option<f64>) -> Cell {
        x.map_or(Cell::Empty, Cell::Number)
    }

    /// The cell as the text a reader sees (`True`, `3`, `0.5`, `inf`).
    pub fn display(&self) -> String {
        match self {
            Cell::Empty => String::new(),
            Cell::Text(s) => s.clone(),
            Cell::Int(n) => n.to_string(),
            Cell::Number(x) => runtime::pyfmt::repr(*x),
            Cell::Bool(b) => runtime::pyfmt::bool(*b).into(),
        }
    }
}

/// One sheet's rows under its columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The column names, written in pandas' header style.
    pub header: &'static [&'static str],
    /// The rows, each as long as the header.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// A table of `rows` under `header`.
    pub fn new(header: &'static [&'static str], rows: Vec<Vec<Cell>>) -> Table {
        Table { header, rows }
    }

    /// msprobe's `process_pass_check` over the last (`level`) column: error
    /// if any row is an error, else warning if any is a warning, else pass.
    pub fn level(&self) -> Level {
        self.rows
            .iter()
            .filter_map(|r| r.last())
            .map(|c| {
                if *c == Cell::level(Level::Error) {
                    Level::Error
                } else if *c == Cell::level(Level::Warning) {
                    Level::Warning
                } else {
                    Level::Pass
                }
            })
            .max()
            .unwrap_or(Level::Pass)
    }

    /// Every cell as text, row by row (for tests and messages).
    pub fn texts(&self) -> Vec<Vec<String>> {
        self.rows.iter().map(|r| r.iter().map(Cell::display).collect()).collect()
    }
}
