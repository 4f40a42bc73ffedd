//! The CIFAR-10 recipes' augmentation end to end (docs/configs.md, "CIFAR-10
//! recipes"): SR-FCA's flip, 2-pixel translation and Cutout, and IFCA's
//! brightness and contrast jitter, through `[model] augment` on the native
//! ResNet9 (its own training loop) and the native CNN (the flat loop):
//! bit-identical with 1 and 2 threads, different from the crop and flip alone,
//! and bad values refused with the key named; and the optimizer's recipe keys
//! (SR-FCA's triangular `schedule`, IFCA's `decay_layers`) likewise.

mod common;
use common::check;
use fedcluster_run::config::RunConfig;
use fedcluster_run::rundir::metrics_csv;

const SGD: &str =
    r#"{ kind = "sgd", batch_size = 4, momentum = 0.9, weight_decay = 0.0005, lr_decay = 0.99 }"#;

fn config(model: &str, augment: &str) -> String {
    config_with(model, augment, 2, SGD)
}

fn config_with(model: &str, augment: &str, local_steps: usize, optimizer: &str) -> String {
    format!(
        r#"
seed = 7
rounds = 2
[data]
kind = "synthetic-images"
clients = 4
points_per_client = 8
test_points_per_client = 4
clusters = 2
classes = 3
height = 8
width = 8
channels = 3
[model]
{model}
augment = {{ {augment} }}
[algorithm]
name = "ifca"
clusters = 2
aggregation = "model"
lr = 0.05
local_steps = {local_steps}
optimizer = {optimizer}
"#
    )
}

fn metrics(config: &str, threads: usize) -> String {
    let o = check(config, &[&format!("threads={threads}")]);
    let last = o.final_record().expect("a round");
    assert!(last.train_loss.is_some_and(f64::is_finite), "{config}");
    metrics_csv(&o.records, true)
}

#[test]
fn the_recipes_jitter_is_thread_count_independent_and_takes_effect() {
    let models = [RESNET9, CNN];
    let recipes = [
        "crop_padding = 2, flip = true, cutout = 3",
        "flip = true, brightness = 0.247, contrast = [0.2, 1.8]",
    ];
    for model in models {
        let plain = metrics(&config(model, "crop_padding = 2, flip = true"), 1);
        for recipe in recipes {
            let text = config(model, recipe);
            let one = metrics(&text, 1);
            assert_eq!(one, metrics(&text, 2), "{model} with {recipe}");
            assert_ne!(one, plain, "{model}: {recipe} changed nothing");
        }
    }
}

#[test]
fn bad_jitter_values_are_refused_with_the_key_named() {
    for (augment, key) in [
        ("brightness = -1.0", "augment.brightness"),
        ("contrast = [2.0, 1.0]", "augment.contrast"),
    ] {
        let text = config("kind = \"resnet9\"\nwidth = 2", augment);
        let e = format!("{:#}", RunConfig::parse(&text, &[], "cfg").unwrap_err());
        assert!(e.contains(key), "{augment}: {e}");
    }
}

const RESNET9: &str = "kind = \"resnet9\"\nwidth = 2";
const CNN: &str =
    "kind = \"cnn\"\nchannels = 3\nkernel = 3\npadding = 1\nconv1 = 2\nconv2 = 2\nhidden = 4";
const FLIP: &str = "crop_padding = 2, flip = true";

/// SGD with a fresh state at each local training, plus `extra` keys.
fn sgd(extra: &str) -> String {
    format!(
        r#"{{ kind = "sgd", batch_size = 4, momentum = 0.9, weight_decay = 0.05, keep_state = false{extra} }}"#
    )
}

#[test]
fn the_schedule_and_layer_decay_are_thread_count_independent_and_take_effect() {
    // 8 points in batches of 4: an epoch is 2 steps, so 6 local steps warm up
    // over 2 and decay to 0 at 6.
    let schedule = r#", schedule = { kind = "triangular", warmup_epochs = 1 }"#;
    for (model, layer) in [(RESNET9, "linear.weight"), (CNN, "fc1.weight")] {
        let plain = metrics(&config_with(model, FLIP, 6, &sgd("")), 1);
        let layers = format!(r#", decay_layers = ["{layer}"]"#);
        for extra in [
            schedule.to_string(),
            layers.clone(),
            format!("{schedule}{layers}"),
        ] {
            let text = config_with(model, FLIP, 6, &sgd(&extra));
            let one = metrics(&text, 1);
            assert_eq!(one, metrics(&text, 2), "{model} with {extra}");
            assert_ne!(one, plain, "{model}: {extra} changed nothing");
        }
    }
}

#[test]
fn bad_recipe_keys_are_refused_with_the_key_named() {
    let kept = r#"{ kind = "sgd", batch_size = 4, schedule = { kind = "triangular", warmup_epochs = 1 } }"#;
    let text = config_with(CNN, FLIP, 6, kept);
    let e = format!("{:#}", RunConfig::parse(&text, &[], "cfg").unwrap_err());
    assert!(
        e.contains("optimizer.schedule") && e.contains("keep_state"),
        "{e}"
    );
    let text = config_with(CNN, FLIP, 6, &sgd(r#", decay_layers = ["fc3.weight"]"#));
    let config = RunConfig::parse(&text, &[], "cfg").expect("parses");
    let data = fedcluster_run::experiment::build_data(&config).expect("data");
    let e = fedcluster_run::experiment::execute(&config, &data.view(), &mut |_| {}).unwrap_err();
    let e = format!("{e:#}");
    assert!(e.contains("algorithm.optimizer.decay_layers"), "{e}");
    assert!(
        e.contains("fc3.weight") && e.contains("fc1.weight, fc1.bias"),
        "{e}"
    );
}

/// A config of `algorithm` on 16x16 CIFAR-shaped stand-ins (the SR-FCA code's
/// ResNet9 takes sides that are multiples of 4, at least 12), SGD as the
/// SR-FCA recipe (a fresh state at each local training).
fn config_16(model: &str, algorithm: &str) -> String {
    format!(
        r#"
seed = 7
rounds = 4
[data]
kind = "synthetic-images"
clients = 4
points_per_client = 8
test_points_per_client = 4
clusters = 2
classes = 3
height = 16
width = 16
channels = 3
[model]
{model}
augment = {{ {FLIP} }}
[algorithm]
{algorithm}
optimizer = {}
"#,
        sgd("")
    )
}

const IFCA: &str =
    "name = \"ifca\"\nclusters = 2\naggregation = \"model\"\nlr = 0.05\nlocal_steps = 2";

/// SR-FCA with two REFINE steps of 3 rounds of 2 local steps each.
fn srfca(extra: &str) -> String {
    format!(
        "name = \"srfca\"\nthreshold = {{ kind = \"quantile\", value = 0.5 }}\nlocal_steps = 2\n\
         local_lr = 0.05\nlocal_optimizer = {}\nrefine_steps = 2\nrefine_rounds = 3\n\
         refine_local_steps = 2\ntrim = 0.0\nlr = 0.05\n{extra}",
        sgd("")
    )
}

#[test]
fn the_srfca_codes_resnet9_is_thread_count_independent_and_not_pages() {
    let code = "kind = \"resnet9\"\nwidth = 2\nvariant = \"srfca\"";
    let text = config_16(code, IFCA);
    let one = metrics(&text, 1);
    assert_eq!(one, metrics(&text, 2));
    assert_ne!(
        one,
        metrics(&config_16(RESNET9, IFCA), 1),
        "the variant changed nothing"
    );
    // Page's network is the default, spelled out or not.
    let page = format!("{RESNET9}\nvariant = \"page\"");
    assert_eq!(
        metrics(&config_16(&page, IFCA), 1),
        metrics(&config_16(RESNET9, IFCA), 1)
    );
}

#[test]
fn the_srfca_codes_resnet9_refuses_what_it_cannot_build_naming_the_key() {
    let cases = [
        (
            "kind = \"resnet9\"\nwidth = 2\nvariant = \"srfca\"\nbackend = \"ndarray\"",
            "variant",
        ),
        (
            "kind = \"resnet9\"\nwidth = 2\nvariant = \"ffcv\"",
            "variant",
        ),
    ];
    for (model, key) in cases {
        let text = config_16(model, IFCA);
        let e = match RunConfig::parse(&text, &[], "cfg") {
            Err(e) => format!("{e:#}"),
            Ok(config) => {
                let data = fedcluster_run::experiment::build_data(&config).expect("data");
                let run = fedcluster_run::experiment::execute(&config, &data.view(), &mut |_| {});
                format!("{:#}", run.expect_err(model))
            }
        };
        assert!(e.contains(key), "{model}: {e}");
    }
    // 8x8 images are too small for its stride, pooling and unpadded 3x3.
    let text = config("kind = \"resnet9\"\nwidth = 2\nvariant = \"srfca\"", FLIP);
    let config = RunConfig::parse(&text, &[], "cfg").expect("parses");
    let data = fedcluster_run::experiment::build_data(&config).expect("data");
    let e = fedcluster_run::experiment::execute(&config, &data.view(), &mut |_| {}).unwrap_err();
    assert!(
        format!("{e:#}").contains("multiple of 4 and at least 12"),
        "{e:#}"
    );
}

#[test]
fn refines_schedule_is_thread_count_independent_and_takes_effect() {
    let code = "kind = \"resnet9\"\nwidth = 2\nvariant = \"srfca\"";
    // 1 ONE_SHOT + 1 pairwise + 2 x (3 + 1) rounds.
    let rounds = ["rounds=10"];
    let run = |algorithm: &str, threads: usize| {
        let o = check(
            &config_16(code, algorithm),
            &[rounds[0], &format!("threads={threads}")],
        );
        metrics_csv(&o.records, true)
    };
    let plain = run(&srfca(""), 1);
    let scheduled = srfca("refine_schedule = { kind = \"triangular\", warmup_rounds = 1 }");
    let one = run(&scheduled, 1);
    assert_eq!(one, run(&scheduled, 2));
    assert_ne!(one, plain, "the schedule changed nothing");
}

/// The IFCA code's network behind its input stage: a 6x6 window of the 8x8
/// images, standardised per image.
const TF_CIFAR: &str = "kind = \"cnn-ifca-cifar\"\nfilters = 2\ndense1 = 4\ndense2 = 3\n\
                        crop = [6, 6]\nstandardize = true";

#[test]
fn ifcas_brightness_and_contrast_on_the_input_stage_are_thread_count_independent() {
    let plain = metrics(&config(TF_CIFAR, "flip = true"), 1);
    let text = config(
        TF_CIFAR,
        "flip = true, brightness = 0.247, contrast = [0.2, 1.8]",
    );
    let one = metrics(&text, 1);
    assert_eq!(one, metrics(&text, 2), "{text}");
    assert_ne!(one, plain, "the jitter changed nothing");
}
