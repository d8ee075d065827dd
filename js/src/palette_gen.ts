// Generated from jupyter_profview/palette.py by `python -m jupyter_profview.palette`;
// do not edit (tests/test_palette.py checks that it is up to date).

export const CATEGORY_COLORS: Readonly<Record<string, string>> = {
  "cpu_op": "#4e79a7",
  "Operator": "#4e79a7",
  "user_annotation": "#a0cbe8",
  "python_function": "#9c755f",
  "cuda_runtime": "#edc948",
  "Runtime": "#edc948",
  "cuda_driver": "#b6992d",
  "cpu_instant_event": "#79706e",
  "Trace": "#d7d7d7",
  "fwdbwd": "#d4a6c8",
  "kernel": "#2e9e44",
  "Kernel": "#2e9e44",
  "gpu_user_annotation": "#8cd17d",
  "memcpy": "#e15759",
  "gpu_memcpy": "#e15759",
  "Memcpy": "#e15759",
  "memset": "#ff9d9a",
  "gpu_memset": "#ff9d9a",
  "Memset": "#ff9d9a",
  "communication": "#8e44ad",
  "cuda_sync": "#6b5b95"
};
export const COMMUNICATION_COLOR: string = "#8e44ad";
export const LAUNCH_COLOR: string = "#edc948";
export const KERNEL_COLOR: string = "#2e9e44";
export const UNKNOWN_COLORS: readonly string[] = ["#76b7b2", "#3e8fb0", "#bcbd22", "#17becf", "#8c564b", "#d37295", "#499894", "#86bcb6", "#c7a76c", "#1f3f8f", "#a3a500"];
export const OTHER_COLOR: string = "#b3b3b3";
export const IDLE_COLOR: string = "#e6e6e6";
export const IDLE_SHADE_COLOR: string = "#8c8c8c";
export const IDLE_SHADE_ALPHA: number = 0.35;
export const PHASE_COLORS: Readonly<Record<string, string>> = {
  "forward": "#4e79a7",
  "backward": "#e8711a",
  "optimizer": "#59a14f",
  "communication": "#8e44ad",
  "other": "#b3b3b3",
  "idle": "#e6e6e6"
};
export const METRIC_SCALE: readonly string[] = ["#bd0026", "#f03b20", "#fd8d3c", "#feb24c", "#fed976"];
export const TENSOR_CORE_COLORS: Readonly<Record<string, string>> = {
  "tensor core": "#fed976",
  "no tensor core": "#f03b20"
};
export const SERIES_COLORS: readonly string[] = ["#1f3f8f", "#17becf", "#bcbd22", "#d37295", "#76b7b2", "#e8711a", "#7f7f7f", "#8c564b", "#4e79a7", "#59a14f", "#e15759", "#ff9da7"];
export const BOUND_COLORS: Readonly<Record<string, string>> = {
  "cpu": "#4e79a7",
  "kernel": "#2e9e44",
  "communication": "#8e44ad",
  "launch": "#edc948",
  "kernel_gap": "#e15759",
  "sync": "#6b5b95"
};
