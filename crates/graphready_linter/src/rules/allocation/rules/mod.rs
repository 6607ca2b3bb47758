pub mod grow_on_demand_buffer;
pub mod host_allocation_moved_to_device;
pub mod per_step_allocation;
pub mod uninitialized_partial_write;
