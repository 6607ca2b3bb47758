pub mod check;
pub mod probe;
pub mod rule;
