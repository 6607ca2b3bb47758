//! GR1xx: device→host synchronisations.

pub mod rules;
