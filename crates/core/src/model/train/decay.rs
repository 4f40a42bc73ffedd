//! Weight decay on chosen tensors only: the IFCA public code's L2 penalty
//! (`cifar/cifar10.py`, the TF CIFAR-10 tutorial's `_variable_with_weight_decay`:
//! `wd · l2_loss(w) = wd · Σ w² / 2` added to the loss, `wd = 0.004`, on the two
//! hidden fully connected layers' weights and nothing else). Its gradient
//! `wd · w` on those coordinates is what [`add_decay`] adds; the tensors are
//! picked by the names the model gives them ([`crate::Model::tensors`]).
//!
//! (The SR-FCA code's `SGD(weight_decay=5e-4)` over `model.parameters()` decays
//! every trainable tensor, batch normalisation's scale and shift included and
//! its running statistics not: the SGD optimizer's own `weight_decay`.)

use std::ops::Range;

use crate::error::{CoreError, Result};
use crate::model::TensorSpec;

/// The coordinate ranges of the tensors named `names` in the flat vector laid
/// out by `tensors`, in the order named; an unknown or repeated name is an
/// error that lists the model's tensors.
pub fn tensor_ranges(tensors: &[TensorSpec], names: &[&str]) -> Result<Vec<Range<usize>>> {
    let mut starts = Vec::with_capacity(tensors.len());
    let mut at = 0;
    for t in tensors {
        let len: usize = t.shape.iter().product();
        starts.push((t.name.as_str(), at..at + len));
        at += len;
    }
    let mut out: Vec<Range<usize>> = Vec::with_capacity(names.len());
    for name in names {
        let Some((_, range)) = starts.iter().find(|(n, _)| n == name) else {
            let known: Vec<&str> = starts.iter().map(|(n, _)| *n).collect();
            return Err(CoreError::Invalid {
                what: "decayed tensors",
                why: format!(
                    "no tensor named `{name}`; the model has {}",
                    known.join(", ")
                ),
            });
        };
        if out.contains(range) {
            return Err(CoreError::Invalid {
                what: "decayed tensors",
                why: format!("`{name}` is named twice"),
            });
        }
        out.push(range.clone());
    }
    Ok(out)
}

/// `grad += weight · params` on the coordinates of `ranges` only (the
/// gradient of `(weight / 2) Σ w²` over them).
pub fn add_decay(grad: &mut [f32], params: &[f32], ranges: &[Range<usize>], weight: f32) {
    for r in ranges {
        for (g, w) in grad[r.clone()].iter_mut().zip(&params[r.clone()]) {
            *g += weight * w;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Vec<TensorSpec> {
        vec![
            TensorSpec::new("conv.weight", &[2, 2]),
            TensorSpec::new("conv.bias", &[2]),
            TensorSpec::new("fc1.weight", &[3]),
            TensorSpec::new("fc1.bias", &[1]),
            TensorSpec::new("fc2.weight", &[2]),
        ]
    }

    #[test]
    fn only_the_named_tensors_are_decayed() {
        let ranges = tensor_ranges(&layout(), &["fc2.weight", "fc1.weight"]).unwrap();
        assert_eq!(ranges, [10..12, 6..9]);
        let params: Vec<f32> = (1..=12).map(|v| v as f32).collect();
        let mut grad = vec![1.0f32; 12];
        add_decay(&mut grad, &params, &ranges, 0.5);
        let want = [
            1.0, 1.0, 1.0, 1.0, 1.0, 1.0, // conv: untouched
            4.5, 5.0, 5.5, // fc1.weight: 1 + ½ w
            1.0, // fc1.bias: untouched
            6.5, 7.0, // fc2.weight
        ];
        assert_eq!(grad, want);
    }

    #[test]
    fn unknown_or_repeated_names_are_refused_by_name() {
        let err = tensor_ranges(&layout(), &["fc3.weight"]).unwrap_err();
        assert!(err.to_string().contains("`fc3.weight`"), "{err}");
        assert!(err.to_string().contains("fc2.weight"), "{err}");
        let err = tensor_ranges(&layout(), &["fc1.weight", "fc1.weight"]).unwrap_err();
        assert!(err.to_string().contains("named twice"), "{err}");
        assert_eq!(tensor_ranges(&layout(), &[]).unwrap(), []);
    }
}
