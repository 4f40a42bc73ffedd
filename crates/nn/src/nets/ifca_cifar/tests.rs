use fedcluster_core::{Batch, ImageShape, Purpose, Targets, Task, Workspace, stream};

use super::*;

fn parse(text: &str) -> Result<CnnIfcaCifarConfig, toml::de::Error> {
    toml::from_str(text)
}

fn cifar(height: usize, classes: usize) -> Input {
    let shape = ImageShape {
        height,
        width: height,
        channels: 3,
    };
    Input::images(shape, Task::Classification { classes })
}

#[test]
fn defaults_are_the_ifca_codes_and_write_back() {
    let config = parse("").unwrap();
    assert_eq!(config.crop, [24, 24]);
    assert!(config.standardize && config.label_smoothing == 0.0 && config.normalize.is_none());
    let model = config.build(&cifar(32, 10)).unwrap();
    assert_eq!((model.num_params(), model.input_dim()), (1_068_298, 3072));
    let recipe = "crop = [20, 22]\nstandardize = false\nlabel_smoothing = 0.1\n\
                  normalize = { mean = [0.49, 0.48, 0.45], std = [0.25, 0.24, 0.26] }\n\
                  augment = { flip = true, brightness = 0.25, contrast = [0.2, 1.8] }";
    let config = parse(recipe).unwrap();
    let again = parse(&toml::to_string(&config).unwrap()).unwrap();
    assert_eq!(again, config);
    assert_eq!(config.normalize.unwrap().0.channels, 3);
}

#[test]
fn bad_values_name_their_key() {
    let built = |text: &str| parse(text).unwrap().build(&cifar(32, 10)).err().unwrap();
    for (text, key) in [
        ("crop = [33, 24]", "model.crop"),
        ("crop = [0, 24]", "model.crop"),
        ("label_smoothing = 1.0", "model.label_smoothing"),
        ("label_smoothing = -0.1", "model.label_smoothing"),
        ("label_smoothing = nan", "model.label_smoothing"),
        (
            "normalize = { mean = [0.5], std = [0.2] }",
            "model.normalize",
        ),
        ("filters = 0", "model.filters"),
        ("channels = 1", "model.channels"),
    ] {
        let err = built(text).to_string();
        assert!(err.contains(key), "{text}: {err}");
    }
    for text in [
        "normalize = { mean = [0.5, 0.5, 0.5], std = [0.2, 0.0, 0.2] }",
        "normalize = { mean = [0.5], std = [0.2, 0.2] }",
        "normalize = { mean = [0.5] }",
        "backend = \"flex\"",
        "hidden = 8",
    ] {
        let err = parse(text).unwrap_err().to_string();
        assert!(!err.is_empty(), "{text}");
    }
    let err = parse("normalize = { mean = [0.5], std = [-1.0] }").unwrap_err();
    assert!(err.to_string().contains("normalize"), "{err}");
}

/// A small network on 8x8x3 images of 3 classes, seen through a 4x4 window.
fn small(extra: &str) -> Box<dyn Model> {
    let text = format!("filters = 2\ndense1 = 3\ndense2 = 3\ncrop = [4, 4]\n{extra}");
    parse(&text).unwrap().build(&cifar(8, 3)).unwrap()
}

fn images(n: usize) -> Vec<f32> {
    (0..n * 192)
        .map(|i| ((i * 37) % 101) as f32 / 50.0)
        .collect()
}

#[test]
fn label_smoothing_reaches_the_loss() {
    // Every parameter 0 but the logits' biases (ln 2, 0, 0): p = (½, ¼, ¼);
    // class 0 under ε = 0.3 has q = (0.8, 0.1, 0.1), so the loss is
    // −(0.8 ln ½ + 0.2 ln ¼) = 1.2 ln 2; without smoothing, ln 2.
    for (extra, want) in [("label_smoothing = 0.3", 1.2 * 2f64.ln()), ("", 2f64.ln())] {
        let model = small(extra);
        let mut p = vec![0.0; model.num_params()];
        p[model.num_params() - 3] = 2f32.ln();
        let x = images(2);
        let batch = Batch::new(&x, Targets::Class(&[0, 0]), 192).unwrap();
        let loss = model.loss(&p, batch, &mut Workspace::default());
        assert!((loss - want).abs() < 1e-6, "{extra}: {loss} vs {want}");
    }
}

#[test]
fn standardisation_applies_at_evaluation() {
    let x = images(3);
    let affine: Vec<f32> = x.iter().map(|v| 4.0 * v - 1.0).collect();
    let y = [0u32, 1, 2];
    for (extra, invariant) in [("", true), ("standardize = false", false)] {
        let model = small(extra);
        let mut p = vec![0.0; model.num_params()];
        model.init(&mut stream(4, Purpose::ClientData, 0, 0), &mut p);
        // Larger than the TF start (whose logits hardly move), so inputs matter.
        p.iter_mut().for_each(|v| *v *= 20.0);
        let mut ws = Workspace::default();
        let mut loss =
            |x: &[f32]| model.loss(&p, Batch::new(x, Targets::Class(&y), 192).unwrap(), &mut ws);
        let (a, b) = (loss(&x), loss(&affine));
        assert_eq!((a - b).abs() < 1e-5, invariant, "{extra}: {a} vs {b}");
    }
}
