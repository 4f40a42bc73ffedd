//! Compiles the versioned protocol (`proto/fedcluster/v1/federation.proto`)
//! with protox, a pure-Rust protobuf compiler, so no `protoc` is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "fedcluster/v1/federation.proto";
    println!("cargo:rerun-if-changed=proto/{proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    // `bytes` fields as `Bytes`: a chunk is shared, not copied, by every pull.
    tonic_prost_build::configure()
        .bytes(".")
        .compile_fds(descriptors)?;
    Ok(())
}
