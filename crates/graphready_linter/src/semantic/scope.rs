//! A scope of the semantic model: its bindings and what is known of its names.

use super::types::Ty;
use rustc_hash::{FxHashMap, FxHashSet};

#[derive(Debug, Clone)]
pub(super) enum Binding {
    /// An imported module or member, by qualified name.
    Import(String),
    Value(Ty),
}

#[derive(Debug, Default)]
pub(super) struct Scope<'a> {
    pub(super) is_class: bool,
    pub(super) bindings: FxHashMap<&'a str, Binding>,
    /// Names bound here to a maybe-device boolean tensor (a mask), see
    /// [`super::SemanticModel::is_bool_tensor`].
    pub(super) bool_tensors: FxHashSet<&'a str>,
    /// Names bound here to the host device (`device = seq_lens_cpu.device`, `dev = "cpu"`),
    /// see [`super::SemanticModel::is_host_device`].
    pub(super) host_devices: FxHashSet<&'a str>,
    /// The parameters of the function this scope belongs to.
    pub(super) parameters: FxHashSet<&'a str>,
    /// Its variadic keyword parameter (`**kwargs`), while not bound again.
    pub(super) kwargs: Option<&'a str>,
    /// Names bound here to an environment flag off by default (`_validate =
    /// envs.X.get()`), see [`super::SemanticModel::is_off_flag`].
    pub(super) off_flags: FxHashSet<&'a str>,
    /// Attribute paths known to hold host data: an assertion declared a host tensor (`assert
    /// batch.lens.is_cpu`), or the receiver's class annotates the field (`num_scheduled_tokens:
    /// np.ndarray`).
    pub(super) host_attributes: FxHashMap<String, Ty>,
    /// Names bound here to an f-string (`key = f"{modality}_grid_thw"`): its literal text before
    /// the first and after the last interpolation, see [`super::SemanticModel::reads_host_field`].
    pub(super) key_patterns: FxHashMap<&'a str, (String, String)>,
    /// Names bound here to a view of a parameter (`lens = qo_lens[:split]`), by the
    /// parameter's name, see [`super::SemanticModel::parameter_viewed`].
    pub(super) param_views: FxHashMap<&'a str, &'a str>,
    /// Locals unpacked from a call's result whose type the module cannot see (`embeds, mask =
    /// self.state.gather(batch)`): the call's offset and the local's position in the tuple.
    pub(super) unpacked: FxHashMap<&'a str, (u32, u8)>,
    /// Names bound here to an empty list literal and not appended to since, see
    /// [`super::SemanticModel::learn_append`].
    pub(super) empty_lists: FxHashSet<&'a str>,
    /// Names bound here to a list literal with a tensor made in host memory among its elements
    /// (`parts = [torch.tensor([0])]`), see [`super::SemanticModel::has_host_part`].
    pub(super) host_parts: FxHashSet<&'a str>,
    /// Names a clause that runs while capturing set to a false literal, where the other clause
    /// runs only outside capture (`if not capturing: x = m.any() else: x = False`).
    pub(super) capture_false: FxHashSet<&'a str>,
    /// Names that hold a value only while capturing and `None` otherwise (`cg = buffers if
    /// get_is_capture_mode() else None`): `cg is None` is false while capturing.
    pub(super) capture_only: FxHashSet<&'a str>,
    /// Names bound here to a media record (`false`) or a sequence of them (`true`), by class,
    /// see [`super::SemanticModel::record_of`].
    pub(super) records: FxHashMap<&'a str, (&'a str, bool)>,
}

impl Scope<'_> {
    /// Empties the scope for another function, keeping its tables' memory.
    pub(super) fn clear(&mut self) {
        self.bindings.clear();
        self.bool_tensors.clear();
        self.host_devices.clear();
        self.parameters.clear();
        self.off_flags.clear();
        self.host_attributes.clear();
        self.key_patterns.clear();
        self.param_views.clear();
        self.unpacked.clear();
        self.empty_lists.clear();
        self.host_parts.clear();
        self.capture_false.clear();
        self.capture_only.clear();
        self.records.clear();
    }
}
