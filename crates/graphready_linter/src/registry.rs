//! The one table of rules: each row names a rule's violation type, whose file declares
//! everything else (code, name, severity, selection, the calls it judges, its docs). The rule
//! enum, its metadata, the dispatch to every rule's hooks and the call gate derive from it.

use crate::checker::Checker;
use crate::rules::{allocation, capture_illegal, dynamic_shape, host_data, sync};
use crate::violation::{Calls, Check, Violation};
use graphready_diagnostics::Severity;
use ruff_python_ast::{self as ast, Expr, Stmt};
use rustc_hash::FxHashMap;
use std::fmt;
use std::sync::LazyLock;

/// A rule family: the hundreds digit of the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    Sync,
    DynamicShape,
    HostData,
    Allocation,
    CaptureIllegal,
}

impl Family {
    pub const fn as_str(self) -> &'static str {
        match self {
            Family::Sync => "sync",
            Family::DynamicShape => "dynamic-shape",
            Family::HostData => "host-data",
            Family::Allocation => "allocation",
            Family::CaptureIllegal => "capture-illegal",
        }
    }
}

macro_rules! rule_table {
    ($( $variant:ident => $rule:path; )*) => {
        /// Every rule graphready knows.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Rule { $($variant),* }

        impl Rule {
            pub const ALL: &'static [Rule] = &[$(Rule::$variant),*];

            pub const fn code(self) -> &'static str {
                match self { $(Rule::$variant => <$rule as Violation>::CODE),* }
            }

            pub const fn name(self) -> &'static str {
                match self { $(Rule::$variant => <$rule as Violation>::NAME),* }
            }

            pub const fn severity(self) -> Severity {
                match self { $(Rule::$variant => <$rule as Violation>::SEVERITY),* }
            }

            /// Runs only when selected by code, prefix or `ALL` (see [`Violation::OPT_IN`]).
            pub const fn is_opt_in(self) -> bool {
                match self { $(Rule::$variant => <$rule as Violation>::OPT_IN),* }
            }

            /// Reported only in captured code (see [`Violation::CAPTURED_ONLY`]).
            pub const fn is_captured_only(self) -> bool {
                match self { $(Rule::$variant => <$rule as Violation>::CAPTURED_ONLY),* }
            }

            const fn calls(self) -> Calls {
                match self { $(Rule::$variant => <$rule as Violation>::CALLS),* }
            }

            /// The doc comment of the rule's violation type, verbatim.
            pub const fn raw_docs(self) -> &'static str {
                match self { $(Rule::$variant => <$rule>::DOCS),* }
            }

            /// Hands a call to the rule (see [`Check::call`]).
            pub(crate) fn check_call<'a>(self, checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
                match self { $(Rule::$variant => <$rule as Check>::call(checker, call)),* }
            }
        }

        $(impl RuleOf for $rule {
            const RULE: Rule = Rule::$variant;
        })*

        /// Every rule's [`Check::expression`], in registry order.
        pub(crate) fn expression_hooks<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
            $(<$rule as Check>::expression(checker, expr);)*
        }

        /// Every rule's [`Check::statement`], in registry order.
        pub(crate) fn statement_hooks<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
            $(<$rule as Check>::statement(checker, stmt);)*
        }

        /// Every rule's [`Check::truth_test`], in registry order.
        pub(crate) fn truth_test_hooks<'a>(checker: &mut Checker<'a>, test: &'a Expr) {
            $(<$rule as Check>::truth_test(checker, test);)*
        }

        /// Every rule's [`Check::skipped_function`], in registry order.
        pub(crate) fn skipped_function_hooks<'a>(
            checker: &mut Checker<'a>,
            function: &'a ast::StmtFunctionDef,
            qualname: &str,
        ) {
            $(<$rule as Check>::skipped_function(checker, function, qualname);)*
        }

        /// Every rule's [`Check::function_exit`], in registry order.
        pub(crate) fn function_exit_hooks(checker: &mut Checker) {
            $(<$rule as Check>::function_exit(checker);)*
        }
    };
}

/// The rule of a violation type, from its registry row.
pub trait RuleOf {
    const RULE: Rule;
}

rule_table! {
    ItemCall => sync::rules::item_call::ItemCall;
    TolistCall => sync::rules::tolist_call::TolistCall;
    HostTransfer => sync::rules::host_transfer::HostTransfer;
    TensorTruthiness => sync::rules::tensor_truthiness::TensorTruthiness;
    TensorToPythonScalar => sync::rules::tensor_to_python_scalar::TensorToPythonScalar;
    TensorComparisonOnHost => sync::rules::tensor_comparison_on_host::TensorComparisonOnHost;
    ExplicitSynchronize => sync::rules::explicit_synchronize::ExplicitSynchronize;
    TensorFormatting => sync::rules::tensor_formatting::TensorFormatting;
    DeviceScalarAsSize => sync::rules::device_scalar_as_size::DeviceScalarAsSize;
    PageableNonBlockingCopy => sync::rules::pageable_non_blocking_copy::PageableNonBlockingCopy;
    DynamicOutputShapeOp => dynamic_shape::rules::dynamic_output_shape_op::DynamicOutputShapeOp;
    BooleanMaskIndexing => dynamic_shape::rules::boolean_mask_indexing::BooleanMaskIndexing;
    RepeatInterleaveWithoutOutputSize => dynamic_shape::rules::repeat_interleave_without_output_size::RepeatInterleaveWithoutOutputSize;
    OneHotWithoutNumClasses => dynamic_shape::rules::one_hot_without_num_classes::OneHotWithoutNumClasses;
    SplitByDeviceSizes => dynamic_shape::rules::split_by_device_sizes::SplitByDeviceSizes;
    HostDataToDevice => host_data::rules::host_data_to_device::HostDataToDevice;
    HostIndexOnDeviceTensor => host_data::rules::host_index_on_device_tensor::HostIndexOnDeviceTensor;
    HostScalarWrittenToDevice => host_data::rules::host_scalar_written_to_device::HostScalarWrittenToDevice;
    HostStateMutatedInStep => host_data::rules::host_state_mutated_in_step::HostStateMutatedInStep;
    PerStepAllocation => allocation::rules::per_step_allocation::PerStepAllocation;
    HostAllocationMovedToDevice => allocation::rules::host_allocation_moved_to_device::HostAllocationMovedToDevice;
    GrowOnDemandBuffer => allocation::rules::grow_on_demand_buffer::GrowOnDemandBuffer;
    UninitializedPartialWrite => allocation::rules::uninitialized_partial_write::UninitializedPartialWrite;
    CudaRuntimeCallInStep => capture_illegal::rules::cuda_runtime_call_in_step::CudaRuntimeCallInStep;
    PinMemoryInStep => capture_illegal::rules::pin_memory_in_step::PinMemoryInStep;
    RngStateInStep => capture_illegal::rules::rng_state_in_step::RngStateInStep;
    UnregisteredGeneratorInStep => capture_illegal::rules::unregistered_generator_in_step::UnregisteredGeneratorInStep;
    CudnnBenchmarkChange => capture_illegal::rules::cudnn_benchmark_change::CudnnBenchmarkChange;
    HostClockAsData => capture_illegal::rules::host_clock_as_data::HostClockAsData;
    HostCollectiveInStep => capture_illegal::rules::host_collective_in_step::HostCollectiveInStep;
    EventElapsedTimeInStep => capture_illegal::rules::event_elapsed_time_in_step::EventElapsedTimeInStep;
}

impl Rule {
    /// The family, from the code's hundreds digit.
    pub const fn family(self) -> Family {
        match self.code().as_bytes()[2] {
            b'1' => Family::Sync,
            b'2' => Family::DynamicShape,
            b'3' => Family::HostData,
            b'4' => Family::Allocation,
            _ => Family::CaptureIllegal,
        }
    }

    /// Looks a rule up by code (`GR101`) or name (`item-call`).
    pub fn from_code(code: &str) -> Option<Rule> {
        Rule::ALL
            .iter()
            .copied()
            .find(|rule| rule.code().eq_ignore_ascii_case(code) || rule.name() == code)
    }

    /// The documentation with the doc comment's leading space removed from each line.
    pub fn docs(self) -> String {
        let mut out = String::new();
        for line in self.raw_docs().lines() {
            out.push_str(line.strip_prefix(' ').unwrap_or(line));
            out.push('\n');
        }
        out
    }

    /// The rule's page (`graphready rule CODE`, `docs/rules/CODE.md`): a title line, the
    /// family, severity and selection, then the doc comment.
    pub fn page(self) -> String {
        let selection = if self.is_opt_in() {
            " Opt-in: runs only when selected by code, prefix or `ALL`."
        } else {
            ""
        };
        format!(
            "# {} ({})\n\nFamily: {}. Default severity: {}.{selection}\n\n{}",
            self.name(),
            self.code(),
            self.family().as_str(),
            self.severity(),
            self.docs()
        )
    }

    /// The first paragraph under `## What it does`, as one line.
    pub fn summary(self) -> String {
        let docs = self.docs();
        let body = docs
            .split("## What it does")
            .nth(1)
            .unwrap_or(&docs)
            .trim_start();
        let paragraph = body.split("\n\n").next().unwrap_or("");
        paragraph.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

/// Which rules judge which calls, from every rule's [`Violation::CALLS`].
struct CallGate {
    by_name: FxHashMap<&'static str, RuleSet>,
    by_keyword: FxHashMap<&'static str, RuleSet>,
    any: RuleSet,
}

static CALL_GATE: LazyLock<CallGate> = LazyLock::new(|| {
    let mut gate = CallGate {
        by_name: FxHashMap::default(),
        by_keyword: FxHashMap::default(),
        any: RuleSet::empty(),
    };
    for &rule in Rule::ALL {
        match rule.calls() {
            Calls::None => {}
            Calls::Any => gate.any.insert(rule),
            Calls::Named { names, keywords } => {
                for name in names {
                    gate.by_name.entry(name).or_default().insert(rule);
                }
                for keyword in keywords {
                    gate.by_keyword.entry(keyword).or_default().insert(rule);
                }
            }
        }
    }
    gate
});

/// The rules whose [`Check::call`] judges this call.
pub(crate) fn rules_for_call(call: &ast::ExprCall) -> RuleSet {
    let gate = &*CALL_GATE;
    let mut rules = gate.any;
    let name = match &*call.func {
        Expr::Name(name) => Some(name.id.as_str()),
        Expr::Attribute(attribute) => Some(attribute.attr.id.as_str()),
        _ => None,
    };
    if let Some(named) = name.and_then(|name| gate.by_name.get(name)) {
        rules = rules.union(*named);
    }
    for keyword in &call.arguments.keywords {
        if let Some(keyed) = keyword
            .arg
            .as_ref()
            .and_then(|arg| gate.by_keyword.get(arg.id.as_str()))
        {
            rules = rules.union(*keyed);
        }
    }
    rules
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A set of rules, as a bitset over [`Rule`]'s discriminants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RuleSet(u128);

impl RuleSet {
    pub const fn empty() -> Self {
        RuleSet(0)
    }

    pub fn all() -> Self {
        Rule::ALL.iter().copied().collect()
    }

    /// What runs when nothing is selected: every rule but the opt-in ones.
    pub fn default_selection() -> Self {
        Rule::ALL
            .iter()
            .copied()
            .filter(|rule| !rule.is_opt_in())
            .collect()
    }

    pub fn insert(&mut self, rule: Rule) {
        self.0 |= 1u128 << rule as u32;
    }

    pub fn remove(&mut self, rule: Rule) {
        self.0 &= !(1u128 << rule as u32);
    }

    pub const fn contains(&self, rule: Rule) -> bool {
        self.0 & (1u128 << rule as u32) != 0
    }

    pub const fn union(self, other: RuleSet) -> RuleSet {
        RuleSet(self.0 | other.0)
    }

    pub const fn is_empty(&self) -> bool {
        self.0 == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = Rule> + '_ {
        Rule::ALL
            .iter()
            .copied()
            .filter(|rule| self.contains(*rule))
    }
}

impl FromIterator<Rule> for RuleSet {
    fn from_iter<I: IntoIterator<Item = Rule>>(iter: I) -> Self {
        let mut set = RuleSet::empty();
        for rule in iter {
            set.insert(rule);
        }
        set
    }
}

/// A selector as written in configuration: `ALL`, a code prefix (`GR1`, `GR10`), a full code or
/// a rule name. Returns `None` when it matches no rule.
pub fn rules_matching(selector: &str) -> Option<RuleSet> {
    let selector = selector.trim();
    if selector.eq_ignore_ascii_case("ALL") {
        return Some(RuleSet::all());
    }
    let upper = selector.to_ascii_uppercase();
    let set: RuleSet = Rule::ALL
        .iter()
        .copied()
        .filter(|rule| {
            rule.code().starts_with(upper.as_str()) && upper.starts_with("GR")
                || rule.name() == selector
        })
        .collect();
    (!set.is_empty()).then_some(set)
}
