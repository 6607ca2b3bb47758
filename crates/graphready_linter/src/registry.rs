//! The one table of rules: code, variant, kebab-case name, family, default severity, violation type.

use graphready_diagnostics::Severity;
use std::fmt;

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
    ($( $code:literal, $variant:ident, $name:literal, $family:ident, $severity:ident, $violation:path; )*) => {
        /// Every rule graphready knows.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Rule { $($variant),* }

        impl Rule {
            pub const ALL: &'static [Rule] = &[$(Rule::$variant),*];

            pub const fn code(self) -> &'static str {
                match self { $(Rule::$variant => $code),* }
            }

            pub const fn name(self) -> &'static str {
                match self { $(Rule::$variant => $name),* }
            }

            pub const fn family(self) -> Family {
                match self { $(Rule::$variant => Family::$family),* }
            }

            pub const fn severity(self) -> Severity {
                match self { $(Rule::$variant => Severity::$severity),* }
            }

            /// The doc comment of the rule's violation type, verbatim.
            pub const fn raw_docs(self) -> &'static str {
                match self { $(Rule::$variant => <$violation>::DOCS),* }
            }
        }
    };
}

rule_table! {
    "GR101", ItemCall, "item-call", Sync, Error, crate::rules::sync::rules::item_call::ItemCall;
    "GR102", TolistCall, "tolist-call", Sync, Error, crate::rules::sync::rules::tolist_call::TolistCall;
    "GR103", HostTransfer, "host-transfer", Sync, Error, crate::rules::sync::rules::host_transfer::HostTransfer;
    "GR104", TensorTruthiness, "tensor-truthiness", Sync, Error, crate::rules::sync::rules::tensor_truthiness::TensorTruthiness;
    "GR105", TensorToPythonScalar, "tensor-to-python-scalar", Sync, Error, crate::rules::sync::rules::tensor_to_python_scalar::TensorToPythonScalar;
    "GR106", TensorComparisonOnHost, "tensor-comparison-on-host", Sync, Error, crate::rules::sync::rules::tensor_comparison_on_host::TensorComparisonOnHost;
    "GR107", ExplicitSynchronize, "explicit-synchronize", Sync, Error, crate::rules::sync::rules::explicit_synchronize::ExplicitSynchronize;
    "GR108", TensorFormatting, "tensor-formatting", Sync, Error, crate::rules::sync::rules::tensor_formatting::TensorFormatting;
    "GR109", DeviceScalarAsSize, "device-scalar-as-size", Sync, Error, crate::rules::sync::rules::device_scalar_as_size::DeviceScalarAsSize;
    "GR201", DynamicOutputShapeOp, "dynamic-output-shape-op", DynamicShape, Error, crate::rules::dynamic_shape::rules::dynamic_output_shape_op::DynamicOutputShapeOp;
    "GR202", BooleanMaskIndexing, "boolean-mask-indexing", DynamicShape, Error, crate::rules::dynamic_shape::rules::boolean_mask_indexing::BooleanMaskIndexing;
    "GR203", RepeatInterleaveWithoutOutputSize, "repeat-interleave-without-output-size", DynamicShape, Error, crate::rules::dynamic_shape::rules::repeat_interleave_without_output_size::RepeatInterleaveWithoutOutputSize;
    "GR204", OneHotWithoutNumClasses, "one-hot-without-num-classes", DynamicShape, Error, crate::rules::dynamic_shape::rules::one_hot_without_num_classes::OneHotWithoutNumClasses;
    "GR205", SplitByDeviceSizes, "split-by-device-sizes", DynamicShape, Error, crate::rules::dynamic_shape::rules::split_by_device_sizes::SplitByDeviceSizes;
    "GR301", HostDataToDevice, "host-data-to-device", HostData, Error, crate::rules::host_data::rules::host_data_to_device::HostDataToDevice;
    "GR302", HostIndexOnDeviceTensor, "host-index-on-device-tensor", HostData, Error, crate::rules::host_data::rules::host_index_on_device_tensor::HostIndexOnDeviceTensor;
    "GR303", HostScalarWrittenToDevice, "host-scalar-written-to-device", HostData, Error, crate::rules::host_data::rules::host_scalar_written_to_device::HostScalarWrittenToDevice;
    "GR304", HostStateMutatedInStep, "host-state-mutated-in-step", HostData, Warning, crate::rules::host_data::rules::host_state_mutated_in_step::HostStateMutatedInStep;
    "GR401", PerStepAllocation, "per-step-allocation", Allocation, Info, crate::rules::allocation::rules::per_step_allocation::PerStepAllocation;
    "GR402", HostAllocationMovedToDevice, "host-allocation-moved-to-device", Allocation, Warning, crate::rules::allocation::rules::host_allocation_moved_to_device::HostAllocationMovedToDevice;
    "GR403", GrowOnDemandBuffer, "grow-on-demand-buffer", Allocation, Error, crate::rules::allocation::rules::grow_on_demand_buffer::GrowOnDemandBuffer;
    "GR404", UninitializedPartialWrite, "uninitialized-partial-write", Allocation, Error, crate::rules::allocation::rules::uninitialized_partial_write::UninitializedPartialWrite;
    "GR501", CudaRuntimeCallInStep, "cuda-runtime-call-in-step", CaptureIllegal, Error, crate::rules::capture_illegal::rules::cuda_runtime_call_in_step::CudaRuntimeCallInStep;
    "GR502", PinMemoryInStep, "pin-memory-in-step", CaptureIllegal, Error, crate::rules::capture_illegal::rules::pin_memory_in_step::PinMemoryInStep;
    "GR503", RngStateInStep, "rng-state-in-step", CaptureIllegal, Error, crate::rules::capture_illegal::rules::rng_state_in_step::RngStateInStep;
    "GR504", UnregisteredGeneratorInStep, "unregistered-generator-in-step", CaptureIllegal, Error, crate::rules::capture_illegal::rules::unregistered_generator_in_step::UnregisteredGeneratorInStep;
    "GR505", CudnnBenchmarkChange, "cudnn-benchmark-change", CaptureIllegal, Error, crate::rules::capture_illegal::rules::cudnn_benchmark_change::CudnnBenchmarkChange;
    "GR506", HostClockAsData, "host-clock-as-data", CaptureIllegal, Error, crate::rules::capture_illegal::rules::host_clock_as_data::HostClockAsData;
    "GR507", HostCollectiveInStep, "host-collective-in-step", CaptureIllegal, Error, crate::rules::capture_illegal::rules::host_collective_in_step::HostCollectiveInStep;
    "GR508", EventElapsedTimeInStep, "event-elapsed-time-in-step", CaptureIllegal, Error, crate::rules::capture_illegal::rules::event_elapsed_time_in_step::EventElapsedTimeInStep;
}

impl Rule {
    /// Rules that run only when selected by code, prefix or `ALL`: their findings are advice for
    /// a tuned step, not hazards, and they fire in almost every model forward (a per-step
    /// allocation is legal inside a captured graph).
    pub const fn is_opt_in(self) -> bool {
        matches!(self, Rule::PerStepAllocation)
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
