//! Compiles the React components an agent writes (JSX or TSX) to plain JavaScript, on the
//! server, when they are saved, so a syntax error goes back to the agent at once with its
//! line and column, and the browser never runs a compiler.
//!
//! The output is an ES module: JSX becomes `React.createElement` calls (the classic runtime,
//! so the module needs no JSX runtime import), TypeScript syntax is stripped, and imports
//! are limited to the modules the canvas frame provides ([`ALLOWED_IMPORTS`]) — a component
//! cannot name a URL to load code from.
//!
//! Invariant: [`compile`] either returns JavaScript or an error with a 1-based line and
//! column into the agent's source; it never panics on any input.

use std::path::Path;

use oxc::allocator::Allocator;
use oxc::ast::ast::Statement;
use oxc::codegen::Codegen;
use oxc::parser::Parser;
use oxc::semantic::SemanticBuilder;
use oxc::span::SourceType;
use oxc::transformer::{JsxRuntime, TransformOptions, Transformer};

/// Modules a component may import; the canvas frame provides each of them.
pub const ALLOWED_IMPORTS: &[&str] = &["react", "wright"];

/// Largest component source accepted, in bytes.
pub const MAX_SOURCE_BYTES: usize = 256 * 1024;

/// Why a component did not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsxError {
    #[error("syntax error at line {line}, column {column}: {message}")]
    Syntax { message: String, line: usize, column: usize },
    #[error("line {line}, column {column}: import of {module:?} is not allowed; a component may import only {}", ALLOWED_IMPORTS.join(", "))]
    ForbiddenImport { module: String, line: usize, column: usize },
    #[error("the component has no `export default`; export the component as the module's default")]
    NoDefaultExport,
    #[error("the component source is {0} bytes; the limit is {MAX_SOURCE_BYTES}")]
    TooLarge(usize),
}

/// 1-based line and column (in characters) of a byte offset.
fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let before = &source[..offset.min(source.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |tail| tail.chars().count()) + 1;
    (line, column)
}

fn syntax_error(source: &str, diagnostic: &oxc::diagnostics::OxcDiagnostic) -> JsxError {
    let offset = diagnostic.labels.first().map_or(0, |label| label.offset() as usize);
    let (line, column) = line_column(source, offset);
    JsxError::Syntax { message: diagnostic.message.to_string(), line, column }
}

/// Deepest bracket or JSX-tag nesting accepted. The parser and transformer recurse per
/// level; hostile nesting would otherwise overflow the stack, which aborts the process.
pub const MAX_NESTING: usize = 256;

/// Stack of the thread that compiles: generous, because the parser recurses on expressions
/// that nest without brackets (`!!!!x`, long unary chains) too.
const COMPILER_STACK_BYTES: usize = 256 * 1024 * 1024;

/// Compiles one component's source to an ES module of plain JavaScript.
pub fn compile(source: &str) -> Result<String, JsxError> {
    if source.len() > MAX_SOURCE_BYTES {
        return Err(JsxError::TooLarge(source.len()));
    }
    if let Some(offset) = too_deep(source) {
        let (line, column) = line_column(source, offset);
        return Err(JsxError::Syntax { message: format!("nesting deeper than {MAX_NESTING} levels"), line, column });
    }
    // The stack is reserved, not touched: only what the parse really uses is ever mapped.
    let owned = source.to_owned();
    let compiler = std::thread::Builder::new()
        .name("wright-jsx".into())
        .stack_size(COMPILER_STACK_BYTES)
        .spawn(move || compile_on_this_thread(&owned));
    match compiler {
        Ok(handle) => handle.join().unwrap_or_else(|_| {
            Err(JsxError::Syntax { message: "the compiler failed on this input".into(), line: 1, column: 1 })
        }),
        Err(_) => compile_on_this_thread(source),
    }
}

/// The byte offset where bracket or JSX-tag nesting first exceeds [`MAX_NESTING`]. A lexical
/// over-estimate (brackets in strings count too) that is exact for real components.
fn too_deep(source: &str) -> Option<usize> {
    let bytes = source.as_bytes();
    let mut depth: usize = 0;
    for (index, &byte) in bytes.iter().enumerate() {
        let next = bytes.get(index + 1).copied().unwrap_or(b' ');
        match byte {
            b'(' | b'[' | b'{' => depth += 1,
            b'<' if next.is_ascii_alphabetic() || next == b'>' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'<' if next == b'/' => depth = depth.saturating_sub(1),
            b'/' if next == b'>' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_NESTING {
            return Some(index);
        }
    }
    None
}

fn compile_on_this_thread(source: &str) -> Result<String, JsxError> {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, source, SourceType::tsx()).parse();
    if let Some(first) = parsed.diagnostics.first() {
        return Err(syntax_error(source, first));
    }
    let mut program = parsed.program;
    let mut has_default_export = false;
    for statement in &program.body {
        let (module, span) = match statement {
            Statement::ImportDeclaration(import) => (Some(import.source.value.as_str()), import.source.span),
            Statement::ExportAllDeclaration(export) => (Some(export.source.value.as_str()), export.source.span),
            Statement::ExportFromDeclaration(export) => (Some(export.source.value.as_str()), export.source.span),
            Statement::ExportNamedDeclaration(export) => {
                has_default_export |= export.specifiers.iter().any(|specifier| specifier.exported.name() == "default");
                (None, export.span)
            }
            Statement::ExportDefaultDeclaration(_) => {
                has_default_export = true;
                (None, statement_span(statement))
            }
            _ => (None, statement_span(statement)),
        };
        if let Some(module) = module
            && !ALLOWED_IMPORTS.contains(&module)
        {
            let (line, column) = line_column(source, span.start as usize);
            return Err(JsxError::ForbiddenImport { module: module.to_owned(), line, column });
        }
    }
    if !has_default_export {
        return Err(JsxError::NoDefaultExport);
    }
    let semantic = SemanticBuilder::new().build(&program);
    if let Some(first) = semantic.diagnostics.first() {
        return Err(syntax_error(source, first));
    }
    let mut options = TransformOptions::default();
    options.jsx.runtime = JsxRuntime::Classic;
    let transformed = Transformer::new(&allocator, Path::new("component.tsx"), &options)
        .build_with_scoping(semantic.semantic.into_scoping(), &mut program);
    if let Some(first) = transformed.diagnostics.first() {
        return Err(syntax_error(source, first));
    }
    Ok(Codegen::new().build(&program).code)
}

fn statement_span(statement: &Statement<'_>) -> oxc::span::Span {
    use oxc::span::GetSpan;
    statement.span()
}

#[cfg(test)]
mod tests;
