//! Throughput of the skinny kernels with the data in cache (one client's
//! 100 x 1000 block, reused) and streamed from memory (400 clients, 160 MB):
//! `cargo run --release -p fedcluster-core --example kernel_speed`.

use std::time::Instant;

use fedcluster_core::kernels::{rest_x, x_wt};

fn main() {
    let (n, d, count) = (100, 1000, 4);
    for clients in [1usize, 400] {
        let x: Vec<f32> = (0..clients * n * d)
            .map(|i| ((i % 97) as f32) * 0.01)
            .collect();
        let w: Vec<f32> = (0..count * d).map(|i| ((i % 13) as f32) * 0.1).collect();
        let res: Vec<f32> = (0..n).map(|i| i as f32 * 0.01).collect();
        let mut out = vec![0.0; n * count];
        let mut grad = vec![0.0; d];
        let reps = 4000 / clients;
        for (name, backward) in [("forward X·Wᵀ", false), ("backward Resᵀ·X", true)] {
            let t = Instant::now();
            for _ in 0..reps {
                for c in 0..clients {
                    let xc = &x[c * n * d..(c + 1) * n * d];
                    if backward {
                        rest_x(&res, xc, d, 1.0, &mut grad);
                    } else {
                        x_wt(xc, &w, d, &mut out);
                    }
                }
            }
            let secs = t.elapsed().as_secs_f64();
            let cols = if backward { 1 } else { count };
            let flops = (2 * n * d * cols * clients * reps) as f64;
            let place = if clients == 1 {
                "in cache"
            } else {
                "streamed from memory"
            };
            println!("{name:18} {place:21}: {:6.1} GFLOP/s", flops / secs / 1e9);
        }
    }
}
