//! Rendering: typed API calls -> Tera templates -> file text.
//!
//! The templates are compiled into the binary (`include_str!`), so the tool
//! works from any directory. Each output language has its own context:
//! [`PythonContext`] (from the model's `ApiCall`) and [`RustContext`] (from
//! the runtime's `Replay`, made by [`crate::bridge`]). The templates hold
//! the code; [`literal`] makes every value they place.

mod api_map;
pub mod literal;
pub mod machinery;
mod python;
pub mod runtime_crate;
mod rust;

pub use api_map::{exposed, NotExposed};
pub use python::{PythonContext, SharedModule};
pub use rust::RustContext;

use serde::Serialize;

use crate::model::Framework;

/// The language `op_generate` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// A standalone Python script per call.
    Python,
    /// A cargo project per call, on the runtime crate.
    Rust,
}

impl Lang {
    /// The flag spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Lang::Python => "python",
            Lang::Rust => "rust",
        }
    }
}

/// A template failed to render; a bug in a template, never in the input.
#[derive(Debug, thiserror::Error)]
#[error("template {template}: {message}")]
pub struct RenderError {
    /// Which template.
    pub template: &'static str,
    /// Tera's error chain.
    pub message: String,
}

const TEMPLATES: &[(&str, &str)] = &[
    ("python/macros.tera", include_str!("../../templates/python/macros.tera")),
    ("python/pytorch.py.tera", include_str!("../../templates/python/pytorch.py.tera")),
    ("python/mindspore.py.tera", include_str!("../../templates/python/mindspore.py.tera")),
    ("python/mindtorch.py.tera", include_str!("../../templates/python/mindtorch.py.tera")),
    ("python/_numpy_check.py.tera", include_str!("../../templates/python/_numpy_check.py.tera")),
    ("python/_settings.py.tera", include_str!("../../templates/python/_settings.py.tera")),
    ("python/_shared.py.tera", include_str!("../../templates/python/_shared.py.tera")),
    ("python/shared_module.py.tera", include_str!("../../templates/python/shared_module.py.tera")),
    ("rust/macros.tera", include_str!("../../templates/rust/macros.tera")),
    ("rust/Cargo.toml.tera", include_str!("../../templates/rust/Cargo.toml.tera")),
    ("rust/main.rs.tera", include_str!("../../templates/rust/main.rs.tera")),
];

fn error_chain(e: &tera::Error) -> String {
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    msg
}

/// The head template of `framework`'s scripts.
fn head_template(framework: Framework) -> &'static str {
    match framework {
        Framework::PyTorch => "python/pytorch.py.tera",
        Framework::MindSpore => "python/mindspore.py.tera",
        Framework::MindTorch => "python/mindtorch.py.tera",
    }
}

/// The template engine with every template of the tool loaded.
pub struct Renderer {
    tera: tera::Tera,
}

impl Renderer {
    /// Loads the built-in templates.
    pub fn new() -> Result<Renderer, RenderError> {
        let mut tera = tera::Tera::default();
        tera.autoescape_on(vec![]);
        tera.add_raw_templates(TEMPLATES.iter().copied()).map_err(|e| RenderError { template: "(loading)", message: error_chain(&e) })?;
        Ok(Renderer { tera })
    }

    fn render(&self, template: &'static str, ctx: &impl Serialize) -> Result<String, RenderError> {
        let context = tera::Context::from_serialize(ctx).map_err(|e| RenderError { template, message: error_chain(&e) })?;
        self.tera.render(template, &context).map_err(|e| RenderError { template, message: error_chain(&e) })
    }

    /// The Python script of one call, `(Prefix.op.N.dir.py, text)`: its head
    /// followed by the framework's [`machinery`] (standalone), or the head
    /// alone when it imports the shared module (`ctx.shared`).
    pub fn python(&self, framework: Framework, ctx: &PythonContext) -> Result<(String, String), RenderError> {
        let mut text = self.python_head(framework, ctx)?;
        if ctx.shared.is_none() {
            text.push_str(&machinery::machinery(framework));
        }
        Ok((format!("{}.py", ctx.api_full_name), text))
    }

    /// The head of one call's script: docstring, imports, `tested`, `bench`,
    /// `inputs()` and the settings (and, with `ctx.shared`, the import of
    /// the shared module and the entry point).
    fn python_head(&self, framework: Framework, ctx: &PythonContext) -> Result<String, RenderError> {
        self.render(head_template(framework), ctx)
    }

    /// The shared module of `framework`'s scripts (`--shared-module`):
    /// `(file name, text)`, its imports followed by the machinery.
    pub fn shared_module(&self, framework: Framework) -> Result<(String, String), RenderError> {
        let ctx = serde_json::json!({"generator": format!("msprobe-rs {}", env!("CARGO_PKG_VERSION")), "framework": framework.as_str()});
        let mut text = self.render("python/shared_module.py.tera", &ctx)?;
        text.push_str(&machinery::machinery(framework));
        Ok((machinery::shared_module_file(framework), text))
    }

    /// The cargo project of one call: `Prefix.op.N.dir/Cargo.toml` and
    /// `src/main.rs`, paths relative to the output folder.
    pub fn rust(&self, ctx: &RustContext) -> Result<Vec<(String, String)>, RenderError> {
        Ok(vec![
            (format!("{}/Cargo.toml", ctx.api_full_name), self.render("rust/Cargo.toml.tera", ctx)?),
            (format!("{}/src/main.rs", ctx.api_full_name), self.render("rust/main.rs.tera", ctx)?),
        ])
    }
}
