//! Where a network runs: burn's two CPU backends, `ndarray` and `flex`, or,
//! with the `cuda` feature, an NVIDIA GPU. The CUDA driver and NVRTC are
//! probed before burn touches them, so a machine without them gets an error,
//! not a panic inside the CUDA bindings.
//!
//! Both CPU backends are built without threads of their own (ndarray without
//! `multi-threads`, flex without `rayon`, neither with `simd`: the workspace's
//! `burn` line), so every tensor operation runs whole on the thread that calls
//! it, in an order that does not depend on the other threads. Clients then run
//! in parallel on the simulator's rayon pool and a round's result is
//! bit-identical for any thread count (`tests/threads.rs`).

/// burn's ndarray CPU backend with autodiff.
pub type Cpu = burn::backend::Autodiff<burn::backend::NdArray<f32>>;

/// burn's flex CPU backend (im2col + GEMM on the `gemm` crate, one thread per
/// operation) with autodiff.
pub type Flex = burn::backend::Autodiff<burn::backend::Flex>;

/// The CUDA backend with autodiff.
#[cfg(feature = "cuda")]
pub type Gpu = burn::backend::Autodiff<burn::backend::Cuda>;

/// Checks that a CUDA device can be used: the driver library loads, `cuInit`
/// succeeds, a device exists and NVRTC (which compiles kernels at run time)
/// loads. Returns the number of devices.
#[cfg(feature = "cuda")]
pub fn probe_cuda() -> Result<usize, String> {
    use std::ffi::c_int;
    // SAFETY: loading the system's CUDA driver library and calling its C entry
    // points with the signatures of the CUDA driver API.
    unsafe {
        let cuda = ["libcuda.so.1", "libcuda.so"]
            .iter()
            .find_map(|n| libloading::Library::new(*n).ok())
            .ok_or("the CUDA driver library libcuda.so.1 was not found (no NVIDIA driver)")?;
        let init: libloading::Symbol<'_, unsafe extern "C" fn(u32) -> c_int> =
            cuda.get(b"cuInit\0").map_err(|e| format!("cuInit: {e}"))?;
        let rc = init(0);
        if rc != 0 {
            return Err(format!(
                "cuInit failed with CUDA error {rc} (100: no device)"
            ));
        }
        let count: libloading::Symbol<'_, unsafe extern "C" fn(*mut c_int) -> c_int> = cuda
            .get(b"cuDeviceGetCount\0")
            .map_err(|e| format!("cuDeviceGetCount: {e}"))?;
        let mut n: c_int = 0;
        let rc = count(&mut n);
        if rc != 0 || n <= 0 {
            return Err(format!("no CUDA device (error {rc}, {n} devices)"));
        }
        ["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"]
            .iter()
            .find_map(|n| libloading::Library::new(*n).ok())
            .ok_or("NVRTC (libnvrtc.so), which compiles the kernels at run time, was not found")?;
        Ok(n as usize)
    }
}
