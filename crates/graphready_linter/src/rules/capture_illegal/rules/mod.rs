pub mod cuda_runtime_call_in_step;
pub mod cudnn_benchmark_change;
pub mod event_elapsed_time_in_step;
pub mod host_clock_as_data;
pub mod host_collective_in_step;
pub mod pin_memory_in_step;
pub mod rng_state_in_step;
pub mod unregistered_generator_in_step;
