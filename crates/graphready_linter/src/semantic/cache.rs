//! A direct-mapped memo for answers about AST nodes.

/// A direct-mapped memo keyed by AST node address: a lookup is one index and a compare, an
/// insertion never allocates, and a collision merely forgets an older answer.
pub(super) struct NodeCache<T> {
    slots: Vec<Option<(usize, u32, T)>>,
}

impl<T> NodeCache<T> {
    const SLOTS: usize = 256;

    pub(super) fn new() -> Self {
        NodeCache {
            slots: std::iter::repeat_with(|| None).take(Self::SLOTS).collect(),
        }
    }

    fn slot(key: usize) -> usize {
        // Nodes are at least 8-byte aligned and a few dozen bytes apart.
        ((key >> 3).wrapping_mul(0x9E37_79B9) >> 7) & (Self::SLOTS - 1)
    }

    pub(super) fn get(&self, key: usize, generation: u32) -> Option<&T> {
        match &self.slots[Self::slot(key)] {
            Some((k, g, value)) if *k == key && *g == generation => Some(value),
            _ => None,
        }
    }

    pub(super) fn insert(&mut self, key: usize, generation: u32, value: T) {
        self.slots[Self::slot(key)] = Some((key, generation, value));
    }
}
