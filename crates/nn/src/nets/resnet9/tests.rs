//! `[model] kind = "resnet9"`'s recipe keys through the config path: label
//! smoothing reaches the loss, normalisation the evaluation's inputs, and bad
//! values name their key.

use fedcluster_core::{Batch, ImageShape, Purpose, Targets, Task, Workspace, stream};

use super::*;

fn parse(text: &str) -> Result<ResNet9Config, toml::de::Error> {
    toml::from_str(text)
}

/// Images of 8x8x3 in 3 classes.
fn input() -> Input {
    let shape = ImageShape {
        height: 8,
        width: 8,
        channels: 3,
    };
    Input::images(shape, Task::Classification { classes: 3 })
}

fn small(extra: &str) -> Box<dyn Model> {
    parse(&format!("width = 2\n{extra}"))
        .unwrap()
        .build(&input())
        .unwrap()
}

fn images(n: usize) -> Vec<f32> {
    (0..n * 192)
        .map(|i| ((i * 37) % 101) as f32 / 50.0)
        .collect()
}

/// The flat offset of tensor `name`.
fn offset(model: &dyn Model, name: &str) -> usize {
    let tensors = model.tensors();
    let at = tensors.iter().position(|t| t.name == name).unwrap();
    tensors[..at]
        .iter()
        .map(|t| t.shape.iter().product::<usize>())
        .sum()
}

#[test]
fn label_smoothing_reaches_the_loss() {
    // All filters 0: every block outputs ReLU(its shift), so with the last
    // residual block's shift 1 on channel 0 (and 0 elsewhere) the pooled
    // features are e₀; linear.weight[0][0] = 8 ln 2 gives the logits
    // 0.125 · (8 ln 2, 0, 0): p = (½, ¼, ¼). Class 0 under ε = 0.3 has
    // q = (0.8, 0.1, 0.1), so the loss is −(0.8 ln ½ + 0.2 ln ¼) = 1.2 ln 2;
    // without smoothing, ln 2.
    for (extra, want) in [("label_smoothing = 0.3", 1.2 * 2f64.ln()), ("", 2f64.ln())] {
        let model = small(extra);
        let mut p = vec![0.0; model.num_params()];
        model.init(&mut stream(1, Purpose::Init, 0, 0), &mut p);
        let head = offset(model.as_ref(), "linear.weight");
        let shift = offset(model.as_ref(), "res3.1.bn.bias");
        for t in model
            .tensors()
            .iter()
            .filter(|t| t.name.ends_with("conv.weight"))
        {
            let at = offset(model.as_ref(), &t.name);
            let len: usize = t.shape.iter().product();
            p[at..at + len].fill(0.0);
        }
        p[shift..shift + 16].fill(0.0);
        p[shift] = 1.0;
        p[head..].fill(0.0);
        p[head] = 8.0 * 2f32.ln();
        let x = images(2);
        let batch = Batch::new(&x, Targets::Class(&[0, 0]), 192).unwrap();
        let ws = &mut Workspace::default();
        let loss = model.loss(&p, batch, ws);
        assert!((loss - want).abs() < 1e-5, "{extra}: {loss} vs {want}");
        let mut grad = vec![0.0; p.len()];
        let trained = model.loss_grad(&p, batch, &mut grad, ws);
        assert!(
            (trained - want).abs() < 1e-5,
            "{extra}: {trained} vs {want}"
        );
    }
}

#[test]
fn normalisation_applies_at_evaluation() {
    let (mean, std) = ([0.5f32, 0.25, -0.5], [0.5f32, 2.0, 0.25]);
    let normalized = small(&format!("normalize = {{ mean = {mean:?}, std = {std:?} }}"));
    let plain = small("");
    let mut p = vec![0.0; plain.num_params()];
    plain.init(&mut stream(2, Purpose::Init, 0, 0), &mut p);
    // Larger than at the start (whose logits hardly move), so inputs matter.
    p.iter_mut().for_each(|v| *v *= 10.0);
    let x = images(3);
    // What the network should see: (v − mean[c]) / std[c], channels last.
    let by_hand: Vec<f32> = x
        .iter()
        .enumerate()
        .map(|(i, v)| (v - mean[i % 3]) / std[i % 3])
        .collect();
    let y = [0u32, 1, 2];
    let ws = &mut Workspace::default();
    let mut loss =
        |m: &dyn Model, x: &[f32]| m.loss(&p, Batch::new(x, Targets::Class(&y), 192).unwrap(), ws);
    let (a, b) = (
        loss(normalized.as_ref(), &x),
        loss(plain.as_ref(), &by_hand),
    );
    assert!((a - b).abs() < 1e-6, "{a} vs {b}");
    let raw = loss(plain.as_ref(), &x);
    assert!((a - raw).abs() > 1e-4, "normalisation changed nothing: {a}");
}

#[test]
fn recipe_keys_default_off_write_back_and_name_bad_values() {
    let config = parse("").unwrap();
    assert!(config.normalize.is_none() && config.label_smoothing == 0.0);
    assert!(!toml::to_string(&config).unwrap().contains("smoothing"));
    let recipe = "label_smoothing = 0.1\n\
                  normalize = { mean = [0.4914, 0.4822, 0.4465], std = [0.2023, 0.1994, 0.201] }";
    let config = parse(recipe).unwrap();
    assert_eq!(parse(&toml::to_string(&config).unwrap()).unwrap(), config);
    for (text, key) in [
        ("label_smoothing = 1.0", "model.label_smoothing"),
        ("label_smoothing = -0.1", "model.label_smoothing"),
        ("label_smoothing = nan", "model.label_smoothing"),
        (
            "normalize = { mean = [0.5], std = [0.2] }",
            "model.normalize",
        ),
        (
            "backend = \"ndarray\"\nlabel_smoothing = 0.1",
            "model.label_smoothing",
        ),
        (
            "backend = \"ndarray\"\nnormalize = { mean = [0.0, 0.0, 0.0], std = [1.0, 1.0, 1.0] }",
            "model.normalize",
        ),
    ] {
        let err = parse(text).unwrap().build(&input()).err().unwrap();
        assert!(err.to_string().contains(key), "{text}: {err}");
    }
    let err = parse("normalize = { mean = [0.5], std = [0.0] }").unwrap_err();
    assert!(err.to_string().contains("normalize"), "{err}");
}
