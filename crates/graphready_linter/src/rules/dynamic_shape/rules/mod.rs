pub mod boolean_mask_indexing;
pub mod dynamic_output_shape_op;
pub mod one_hot_without_num_classes;
pub mod repeat_interleave_without_output_size;
pub mod split_by_device_sizes;
