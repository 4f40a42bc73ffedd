//! Every model names its flat parameter vector's tensors, and their sizes add
//! up to the vector's length; the layers that PyTorch names are named as
//! PyTorch does.

use fedcluster_core::Model;
use fedcluster_models::{Cnn, LinearRegression, LogisticRegression, Mlp};

fn sizes_add_up(model: &dyn Model) -> Vec<String> {
    let tensors = model.tensors();
    let total: usize = tensors
        .iter()
        .map(|t| t.shape.iter().product::<usize>())
        .sum();
    assert_eq!(total, model.num_params(), "{}", model.name());
    tensors.into_iter().map(|t| t.name).collect()
}

#[test]
fn tensors_cover_every_parameter_of_every_native_model() {
    assert_eq!(sizes_add_up(&LinearRegression::new(7).unwrap()), ["weight"]);
    assert_eq!(
        sizes_add_up(&LogisticRegression::new(7, 3).unwrap()),
        ["weight", "bias"]
    );
    assert_eq!(
        sizes_add_up(&Mlp::new(7, 5, 3).unwrap()),
        ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    );
    let cnn = Cnn::paper(28, 28, 1, 10).unwrap();
    let names = sizes_add_up(&cnn);
    assert_eq!(names.len(), 8);
    assert_eq!(cnn.tensors()[0].shape, [32, 5, 5, 1]);
    assert_eq!(cnn.tensors()[4].shape, [512, 4 * 4 * 64]);
}
