//! Prefill predicates: batch tests that hold only when the step has prefill work. Serving
//! engines capture their graphs for decode batches (vLLM's full graphs hold uniform decode
//! batches, its attention runs outside the piecewise graphs; SGLang captures decode, verify and
//! idle batches): the code a captured function runs for prefill work runs eagerly, on every
//! step that has some. A hazard there stalls the step; it does not break a capture.
//!
//! A test names the batch's prefill work (`attn_metadata.num_prefills > 0`, `if prefill_meta :=
//! attn_metadata.prefill_metadata:`, `forward_mode.is_mixed()`,
//! `forward_batch.contains_mm_inputs()` or any test that the batch brings media
//! (`contains_image_inputs()`), `pixel_values is not None` or a test of any local named for
//! media, or a batch field so named, against `None`, an `is_prefill` flag, a `has_..._prefill`
//! flag such as `has_mixed_prefill`), or denies that the batch is decode only (`if not is_decode:`, `if attn_metadata.is_decode_only:
//! return ...`) or that a CUDA graph runs it (`if batch_info.use_cuda_graph: return ...`), also
//! SGLang's `forward_mode.is_extend()` and `is_prefill()`: they hold for the verify batches its
//! graphs capture too, but those come only with speculative decoding, which is off by default.
//! `not is_decode()` alone does not count (idle batches are captured); `not
//! is_decode_or_idle()`, or `is_decode()` false after `is_idle()` in one `if`/`elif` chain, does
//! ([`ModesRuledOut`]). A name bound to a prefill test is one too
//! ([`Ty::PrefillFlag`]); and a call of a function named for prefill work (`topk_prefill`) is made
//! for it, wherever it is made (the summary builder marks such calls).

use super::model::SemanticModel;
use super::types::Ty;
use crate::util::last_segment;
use ruff_python_ast::{self as ast, Expr};

/// Names (of flags, properties, methods called without arguments) that are true only for a
/// batch with prefill work.
const PREFILL_NAMES: &[&str] = &[
    "is_prefill",
    "has_prefill",
    "has_prefills",
    "is_mixed",
    "is_split_prefill",
    "is_extend_without_speculative",
    "contains_mm_inputs",
    // New images come with a request's prompt: a model's `pixel_values` are `None` in decode.
    "pixel_values",
    "pixel_values_videos",
    "prefill_metadata",
    "prefill_meta",
    "num_prefills",
    "num_prefill_tokens",
    "num_prefill_reqs",
];

/// Names that are true only for a batch of decode work alone.
const DECODE_NAMES: &[&str] = &[
    "is_decode",
    "is_decode_only",
    "is_pure_decode",
    "is_all_decode",
    "decode_only",
    // The batch runs in a CUDA graph (SGLang's LoRA `batch_info.use_cuda_graph`): false, it
    // runs eagerly.
    "use_cuda_graph",
    "use_cudagraph",
    "is_cuda_graph",
];

/// The receivers whose methods are SGLang's `ForwardMode` tests.
const FORWARD_MODES: &[&str] = &["forward_mode", "mode"];

impl SemanticModel<'_> {
    /// Whether `test` evaluating to `!negated` means the batch has prefill work, so the code it
    /// guards runs outside a decode graph.
    pub fn prefill_when(&self, test: &Expr, negated: bool) -> bool {
        match test {
            Expr::UnaryOp(ast::ExprUnaryOp {
                op: ast::UnaryOp::Not,
                operand,
                ..
            }) => self.prefill_when(operand, !negated),
            Expr::BoolOp(bool_op) => self.prefill_bool_op(bool_op, negated),
            Expr::Named(named) => self.prefill_when(&named.value, negated),
            Expr::Compare(compare) => prefill_compare(compare, negated),
            Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_) => {
                if !negated && self.ty(test) == Ty::PrefillFlag {
                    return true;
                }
                match batch_test(test) {
                    Some(Batch::Prefill) => !negated,
                    Some(Batch::Decode) => negated,
                    None => false,
                }
            }
            _ => false,
        }
    }

    /// [`SemanticModel::prefill_when`] of `a and b`, `a or b`.
    pub(super) fn prefill_bool_op(&self, bool_op: &ast::ExprBoolOp, negated: bool) -> bool {
        // `a and b` true: both hold, so one prefill test among them is enough; false: one of
        // them is false, so each must say so. `or` is the mirror image.
        if matches!(bool_op.op, ast::BoolOp::And) != negated {
            bool_op.values.iter().any(|v| self.prefill_when(v, negated))
        } else {
            bool_op.values.iter().all(|v| self.prefill_when(v, negated))
        }
    }
}

/// What the earlier tests of an `if`/`elif` chain, all false, rule out of SGLang's forward
/// modes: with both `is_idle()` and `is_decode()` false, the batch extends (`if
/// mode.is_idle(): ... elif mode.is_decode(): ... else: self.forward_extend(...)`).
#[derive(Default)]
pub struct ModesRuledOut {
    idle: bool,
    decode: bool,
}

impl ModesRuledOut {
    /// Notes a test found false; returns whether the later clauses run only for an extend.
    pub fn note(&mut self, test: &Expr) -> bool {
        if let Expr::Call(call) = test {
            if let Expr::Attribute(method) = &*call.func {
                if call.arguments.is_empty()
                    && last_segment(&method.value).is_some_and(|r| FORWARD_MODES.contains(&r))
                {
                    match method.attr.as_str() {
                        "is_idle" => self.idle = true,
                        "is_decode" => self.decode = true,
                        _ => {}
                    }
                }
            }
        }
        self.idle && self.decode
    }
}

enum Batch {
    /// True only with prefill work.
    Prefill,
    /// True only for decode work alone.
    Decode,
}

/// What a flag, a property or a method called without arguments says of the batch.
fn batch_test(test: &Expr) -> Option<Batch> {
    if let Expr::Call(call) = test {
        if !call.arguments.is_empty() {
            return None;
        }
        // SGLang's `forward_mode.is_extend()` (and `is_prefill()`, the same test) is also true
        // for verify batches, which exist only with speculative decoding (off by default); a
        // batch that is not `is_decode()` may be an idle batch, which is captured.
        if let Expr::Attribute(method) = &*call.func {
            if last_segment(&method.value).is_some_and(|r| FORWARD_MODES.contains(&r)) {
                let name = method.attr.as_str();
                // Neither decode nor idle: an extend, like `is_extend()`.
                if name == "is_decode_or_idle" {
                    return Some(Batch::Decode);
                }
                return (name == "is_extend"
                    || PREFILL_NAMES.contains(&name)
                    || extend_modes(name))
                .then_some(Batch::Prefill);
            }
        }
    }
    let name = last_segment(test)?.trim_start_matches('_');
    if PREFILL_NAMES.contains(&name)
        || extend_field(name)
        || has_prefill_kind(name)
        || media_inputs(name)
    {
        Some(Batch::Prefill)
    } else if DECODE_NAMES.contains(&name) {
        Some(Batch::Decode)
    } else {
        None
    }
}

/// A flag that says the batch holds some kind of prefill work: `has_` a qualified prefill
/// (`has_mixed_prefill`, `has_chunked_prefills`).
fn has_prefill_kind(name: &str) -> bool {
    name.strip_prefix("has_").is_some_and(|rest| {
        let rest = rest.strip_suffix('s').unwrap_or(rest);
        rest.ends_with("_prefill")
    })
}

/// A test that the batch brings media of some kind (`contains_image_inputs`,
/// `contains_mm_input`, `has_audio_inputs`): new media come with a request's prompt.
fn media_inputs(name: &str) -> bool {
    let Some(rest) = name
        .strip_prefix("contains_")
        .or_else(|| name.strip_prefix("has_"))
    else {
        return false;
    };
    rest.strip_suffix("_inputs")
        .or_else(|| rest.strip_suffix("_input"))
        .is_some_and(media_named)
}

/// SGLang's per-request extend data (`extend_seq_lens`, `extend_prefix_lens_cpu`, ...): set
/// only for a batch that extends its requests, `None` in decode; and its logits metadata's
/// input-logprob requests (`extend_return_logprob`, `extend_return_top_logprob`), true only for
/// an extend batch that asks for the prompt's logprobs.
fn extend_field(name: &str) -> bool {
    name.strip_prefix("extend_").is_some_and(|field| {
        matches!(
            field.strip_suffix("_cpu").unwrap_or(field),
            "seq_lens"
                | "prefix_lens"
                | "start_loc"
                | "num_tokens"
                | "logprob_start_lens"
                | "return_logprob"
                | "return_top_logprob"
                | "token_ids_logprob"
                | "input_logprob_token_ids"
        )
    })
}

/// Whether a statement reads into a batch's extend data unguarded (`total =
/// int(forward_batch.extend_seq_lens.sum())`, `forward_batch.extend_start_loc[i]`): that data is
/// `None` in decode, so the statement, and what follows it in its block, runs only for a batch
/// that extends its requests. Only what the statement evaluates whatever the values are counts:
/// not the branches of a conditional expression, nor the operands after the first of `and` and
/// `or`.
pub fn reads_extend_data(stmt: &ast::Stmt) -> bool {
    use ast::Stmt;
    let value = match stmt {
        Stmt::Expr(expr) => Some(&*expr.value),
        Stmt::Assign(assign) => Some(&*assign.value),
        Stmt::AugAssign(assign) => Some(&*assign.value),
        Stmt::AnnAssign(assign) => assign.value.as_deref(),
        Stmt::Return(ret) => ret.value.as_deref(),
        _ => None,
    };
    value.is_some_and(reads_into_extend_data)
}

fn reads_into_extend_data(expr: &Expr) -> bool {
    match expr {
        Expr::Attribute(attribute) => {
            is_extend_data(&attribute.value) || reads_into_extend_data(&attribute.value)
        }
        Expr::Subscript(subscript) => {
            is_extend_data(&subscript.value)
                || reads_into_extend_data(&subscript.value)
                || reads_into_extend_data(&subscript.slice)
        }
        Expr::Call(call) => {
            reads_into_extend_data(&call.func)
                || call.arguments.args.iter().any(reads_into_extend_data)
                || call
                    .arguments
                    .keywords
                    .iter()
                    .any(|keyword| reads_into_extend_data(&keyword.value))
        }
        Expr::BinOp(op) => reads_into_extend_data(&op.left) || reads_into_extend_data(&op.right),
        Expr::UnaryOp(op) => reads_into_extend_data(&op.operand),
        Expr::Compare(compare) => {
            reads_into_extend_data(&compare.left)
                || compare.comparators.iter().any(reads_into_extend_data)
        }
        Expr::If(if_expr) => reads_into_extend_data(&if_expr.test),
        Expr::BoolOp(op) => op.values.first().is_some_and(reads_into_extend_data),
        Expr::Tuple(tuple) => tuple.elts.iter().any(reads_into_extend_data),
        Expr::List(list) => list.elts.iter().any(reads_into_extend_data),
        Expr::Starred(starred) => reads_into_extend_data(&starred.value),
        Expr::Named(named) => reads_into_extend_data(&named.value),
        Expr::Await(await_expr) => reads_into_extend_data(&await_expr.value),
        _ => false,
    }
}

/// A batch's extend data (`forward_batch.extend_seq_lens`); the attributes of `self` are the
/// object's own.
fn is_extend_data(expr: &Expr) -> bool {
    let Expr::Attribute(attribute) = expr else {
        return false;
    };
    let mut root = &*attribute.value;
    while let Expr::Attribute(inner) = root {
        root = &inner.value;
    }
    matches!(root, Expr::Name(name) if !matches!(name.id.as_str(), "self" | "cls"))
        && extend_field(attribute.attr.as_str())
}

/// A `ForwardMode` test of extend modes alone: `is_extend_or_draft_extend_or_mixed`,
/// `is_context_parallel_extend` (a draft model's extend, like a verify batch, comes only with
/// speculative decoding).
fn extend_modes(name: &str) -> bool {
    const EXTEND: &[&str] = &[
        "extend",
        "draft_extend",
        "mixed",
        "prefill",
        "split_prefill",
        "context_parallel_extend",
    ];
    name.strip_prefix("is_")
        .is_some_and(|modes| modes.split("_or_").all(|mode| EXTEND.contains(&mode)))
}

/// `num_prefills > 0`, `prefill_metadata is not None` (and their negations).
fn prefill_compare(compare: &ast::ExprCompare, negated: bool) -> bool {
    let ([op], [right]) = (&*compare.ops, &*compare.comparators) else {
        return false;
    };
    let none = right.is_none_literal_expr();
    // `visual_token_mask is not None`: media inputs come with a request's prompt.
    let media = none && media_input(&compare.left);
    if !media && !matches!(batch_test(&compare.left), Some(Batch::Prefill)) {
        return false;
    }
    let zero = matches!(right, Expr::NumberLiteral(n)
        if matches!(&n.value, ast::Number::Int(i) if i.as_u8() == Some(0)));
    match op {
        ast::CmpOp::Gt | ast::CmpOp::NotEq if zero => !negated,
        ast::CmpOp::Eq if zero => negated,
        ast::CmpOp::IsNot if none => !negated,
        ast::CmpOp::Is if none => negated,
        _ => false,
    }
}

/// Whether a local or parameter holds a step's media input by its name (`visual_token_mask`,
/// `image_embeds`, `audio_features`, `mm_kwargs`, and a speech model's `input_features` or raw
/// `input_values`), or a batch's field does (`forward_batch.mm_token_modalities`), or an entry
/// of one (`mm_encoder_outputs.get("image")`, `mm_inputs["audio"]`): `None` unless the batch
/// brings new media, which comes with a request's prompt. The attributes of `self`
/// (`self.image_size`) and of a configuration (`config.vision_config`) are configuration.
fn media_input(expr: &Expr) -> bool {
    match expr {
        Expr::Call(call) if call.arguments.args.len() == 1 => {
            return matches!(&*call.func, Expr::Attribute(get)
                if get.attr.as_str() == "get" && media_input(&get.value));
        }
        Expr::Subscript(subscript) => return media_input(&subscript.value),
        Expr::Name(name) if matches!(name.id.as_str(), "input_features" | "input_values") => {
            return true
        }
        _ => {}
    }
    if let Expr::Attribute(attribute) = expr {
        let Expr::Name(root) = &*attribute.value else {
            return false;
        };
        let root = root.id.as_str();
        let configuration =
            matches!(root, "self" | "cls") || root.contains("config") || root.contains("cfg");
        return !configuration && media_named(attribute.attr.as_str());
    }
    matches!(expr, Expr::Name(name) if media_named(name.id.as_str()))
}

/// A name with a word that says media: `pixel`, `image`, `video`, `audio`, `mm`, ...
fn media_named(name: &str) -> bool {
    const MEDIA: &[&str] = &[
        "pixel",
        "image",
        "images",
        "video",
        "videos",
        "visual",
        "vision",
        "audio",
        "mm",
        "multimodal",
    ];
    name.split('_').any(|word| MEDIA.contains(&word))
}

#[cfg(test)]
mod tests {
    use super::{has_prefill_kind, media_inputs, reads_extend_data};

    /// Whether the first statement of `source` reads into extend data unguarded.
    fn reads(source: &str) -> bool {
        let parsed = ruff_python_parser::parse_module(source).expect("a module");
        reads_extend_data(&parsed.syntax().body[0])
    }

    #[test]
    fn unguarded_reads_of_extend_data() {
        for source in [
            "total = int(forward_batch.extend_seq_lens.sum())",
            "n = fb.extend_start_loc[i]",
            "return batch.extend_prefix_lens_cpu[0] + 1",
            "out = f(x, lens=forward_batch.extend_seq_lens.tolist())",
        ] {
            assert!(reads(source), "{source}");
        }
        for source in [
            "lens = forward_batch.extend_seq_lens",
            "f(forward_batch.extend_seq_lens)",
            "n = fb.extend_seq_lens.sum() if fb.extend_seq_lens is not None else 0",
            "n = fb.extend_seq_lens is not None and fb.extend_seq_lens.sum()",
            "n = self.extend_seq_lens.sum()",
            "n = fb.seq_lens.sum()",
            "if fb.extend_seq_lens.sum() > 0:\n    pass",
        ] {
            assert!(!reads(source), "{source}");
        }
    }

    #[test]
    fn tests_that_the_batch_brings_media() {
        for name in [
            "contains_image_inputs",
            "contains_mm_input",
            "has_audio_inputs",
        ] {
            assert!(media_inputs(name), "{name}");
        }
        for name in [
            "contains_inputs",
            "has_text_inputs",
            "contains_image",
            "image_inputs",
        ] {
            assert!(!media_inputs(name), "{name}");
        }
    }

    #[test]
    fn flags_for_a_kind_of_prefill() {
        for name in [
            "has_mixed_prefill",
            "has_chunked_prefills",
            "has_new_prefill",
        ] {
            assert!(has_prefill_kind(name), "{name}");
        }
        for name in [
            "has_prefill_lens",
            "mixed_prefill",
            "has_prefilled",
            "enable_prefill",
        ] {
            assert!(!has_prefill_kind(name), "{name}");
        }
    }
}
