//! The SR-FCA code's ResNet9 ([`Variant::Srfca`]): its size against the
//! code's definition, its convolution paths, its gradient against finite
//! differences and learning.

use fedcluster_core::{ImageShape, Model};

use super::tests::{check_gradient, data, learns_with_adam};
use super::*;

fn srfca(side: usize, channels: usize, width: usize, classes: usize) -> Result<ResNet9> {
    ResNet9::new(ResNet9 {
        image: ImageShape {
            height: side,
            width: side,
            channels,
        },
        width,
        classes,
        augmentation: None,
        normalize: None,
        label_smoothing: 0.0,
        variant: Variant::Srfca,
    })
}

/// The code's `ResNet9()` on CIFAR-10 (`cifar_code/model.py`), counted by
/// hand from its definition: convolution weights 3·3·3·64 = 1,728,
/// 5·5·64·128 = 204,800, 2 × 3·3·128·128 = 294,912, 3·3·128·256 = 294,912,
/// 2 × 3·3·256·256 = 1,179,648, 3·3·256·128 = 294,912 (2,270,912 in all), batch
/// norms' scales and shifts 2 · (64 + 128 + 128 + 128 + 256 + 256 + 256 + 128)
/// = 2,688, the linear layer 128 · 10 = 1,280: 2,274,880 trainable
/// parameters (PyTorch's `sum(p.numel() for p in model.parameters())`), plus
/// the batch norms' 2,688 running means and variances.
#[test]
fn the_codes_resnet9_has_the_codes_size_and_tensors() {
    let m = srfca(32, 3, 64, 10).unwrap();
    assert_eq!(m.num_params(), 2_274_880 + 2_688);
    let tensors = m.tensors();
    assert_eq!(
        tensors.len(),
        8 * 5 + 1,
        "eight conv-BN blocks and the linear layer"
    );
    let total: usize = tensors
        .iter()
        .map(|t| t.shape.iter().product::<usize>())
        .sum();
    assert_eq!(total, m.num_params());
    let shape = |name: &str| {
        tensors
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.shape.clone())
            .unwrap_or_else(|| panic!("no tensor {name}"))
    };
    assert_eq!(shape("layer1.conv.weight"), [128, 5, 5, 64]);
    assert_eq!(shape("res2.1.conv.weight"), [256, 3, 3, 256]);
    assert_eq!(shape("layer3.conv.weight"), [128, 3, 3, 256]);
    assert_eq!(shape("linear.weight"), [10, 128]);
    assert_eq!(m.head_start(), m.num_params() - 1280);
    // 32 -> 16 (stride 2) -> 8 (pooling) -> 6 (3x3 without padding).
    let positions: Vec<usize> = m.blocks().iter().map(|b| b.conv.positions()).collect();
    assert_eq!(positions, [1024, 256, 256, 256, 256, 64, 64, 36]);
    let paths: Vec<ConvPath> = m.blocks().iter().map(|b| b.path).collect();
    use ConvPath::{Im2col, Strided, Winograd};
    assert_eq!(
        paths,
        [
            Im2col,
            Strided(2),
            Winograd,
            Winograd,
            Winograd,
            Winograd,
            Winograd,
            Im2col
        ]
    );
    let flops = 2 * (1024 * 27 * 64 + 256 * 1600 * 128 + 2 * 256 * 1152 * 128)
        + 2 * (256 * 1152 * 256 + 2 * 64 * 2304 * 256 + 36 * 2304 * 128)
        + 2 * 128 * 10;
    assert_eq!(m.forward_flops_per_sample(), flops as u64);
    assert!(srfca(12, 3, 2, 10).is_ok(), "12 -> 6 -> 3 -> 1");
    assert!(srfca(16, 3, 2, 10).is_ok(), "16 -> 8 -> 4 -> 2");
    for bad in [8, 10, 30] {
        let err = srfca(bad, 3, 2, 10).unwrap_err().to_string();
        assert!(
            err.contains("multiple of 4 and at least 12"),
            "{bad}: {err}"
        );
    }
}

/// Page's network is still the default, its size unchanged.
#[test]
fn pages_network_stays_the_default() {
    assert_eq!(Variant::default(), Variant::Page);
    let page = ResNet9::new(ResNet9 {
        variant: Variant::default(),
        ..srfca(32, 3, 64, 10).unwrap()
    })
    .unwrap();
    assert_eq!(page.num_params(), 6_577_600);
}

/// The gradient of the training-mode loss against central differences,
/// tensor by tensor, through every path: the stride-2 convolution, `im2col`
/// (padding 1 and 0) and Winograd (from 16 input channels: width 4 gives the
/// second residual pair 16).
#[test]
fn gradient_matches_finite_differences() {
    let model = srfca(12, 2, 4, 3).unwrap();
    let paths: Vec<ConvPath> = model.blocks().iter().map(|b| b.path).collect();
    assert!(paths.contains(&ConvPath::Winograd) && paths.contains(&ConvPath::Im2col));
    check_gradient(&model);
    check_gradient(
        &ResNet9::new(ResNet9 {
            label_smoothing: 0.1,
            ..srfca(20, 1, 2, 4).unwrap()
        })
        .unwrap(),
    );
}

#[test]
fn minibatch_training_learns_a_small_problem() {
    let model = srfca(12, 2, 4, 3).unwrap();
    let (x, _) = data(&model, 24, 9);
    // Labels from the image: the sign of the first channel's sum, and its size.
    let y: Vec<u32> = x
        .chunks_exact(model.input_dim())
        .map(|img| {
            let s: f32 = img.iter().step_by(2).sum();
            u32::from(s > -3.0) + u32::from(s > 3.0)
        })
        .collect();
    learns_with_adam(&model, &x, &y);
}
