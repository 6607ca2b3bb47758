//! Types as one module writes them, for the project index to resolve: the classes an annotation
//! or a constructor names, and the paths of expressions whose type follows from other types
//! (`forward_batch.attn_backend`, `self.runner.model`, `get_builder().build`).

use super::Ref;

/// A type named in source: instances of these classes (a union names several), or a container
/// (list, tuple, sequence, dict values) of them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TypeRef {
    pub classes: Vec<Ref>,
    /// A container whose elements are instances of `classes`.
    pub elements: bool,
    /// The classes themselves (`type[X]`), not instances: calling one constructs an instance.
    pub class_object: bool,
}

/// An expression whose type the index can compute: a root, then attribute reads, method calls
/// and item reads.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TypePath {
    pub root: PathRoot,
    pub steps: Vec<PathStep>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathRoot {
    /// A value of a type named in source (an annotated parameter or attribute).
    Type(TypeRef),
    /// `self` in a method of this class (qualified inside the module).
    SelfOf(String),
    /// The result of calling a class (an instance) or a function (its return annotation).
    Called(Ref),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathStep {
    /// `.name`
    Attr(String),
    /// `.name(...)`: what the method returns.
    Call(String),
    /// `[...]`, or an element in `for x in ...`.
    Item,
    /// `cls(...)` of a class object (`impl_cls = backend.get_impl_cls(); impl_cls(...)`): an
    /// instance. Of anything else: nothing known.
    Construct,
    /// A container of the value: what a comprehension builds (`{P: P(self) for P in classes}`).
    Elements,
}

impl TypePath {
    pub fn of_type(ty: TypeRef) -> Self {
        TypePath {
            root: PathRoot::Type(ty),
            steps: Vec::new(),
        }
    }

    /// The path one step further.
    #[must_use]
    pub fn then(&self, step: PathStep) -> Self {
        let mut steps = Vec::with_capacity(self.steps.len() + 1);
        steps.extend_from_slice(&self.steps);
        steps.push(step);
        TypePath {
            root: self.root.clone(),
            steps,
        }
    }
}

/// A parameter as declared: its name and, when annotated with a class, its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub annotation: Option<TypeRef>,
    /// Annotated as a tensor already: a tensor argument tells the function nothing new.
    pub tensor: bool,
    /// Annotated as a host value (`int`, `list[int]`, `np.ndarray`): what its callers pass
    /// does not change that.
    pub host: bool,
    /// A literal default (`True`, `False`, `None`, a number, a string).
    pub default: Option<super::Const>,
    /// Declared without any default: a call must fill it.
    pub required: bool,
    /// After `*` or `*args`: only a keyword fills it.
    pub keyword_only: bool,
}
