pub mod host_data_to_device;
pub mod host_index_on_device_tensor;
pub mod host_scalar_written_to_device;
pub mod host_state_mutated_in_step;
