use super::*;

#[test]
fn sizes_parse_with_their_unit() {
    assert_eq!(parse_size("2G").unwrap(), 2 << 30);
    assert_eq!(parse_size("512MiB").unwrap(), 512 << 20);
    assert_eq!(parse_size("1.5k").unwrap(), 1536);
    assert_eq!(parse_size("100").unwrap(), 100);
    assert!(parse_size("0").is_err());
    assert!(parse_size("2X").is_err());
    assert!(parse_size("").is_err());
}

#[test]
fn a_joining_process_counts_its_own_clients_alone() {
    let text = "seed = 1\nrounds = 1\n[data]\nkind = \"mixed-regression\"\ndim = 50\n\
        clusters = 2\nprobs = [0.5, 0.5]\nclient_sizes = [{ count = 1000, points = 40 }]\n\
        test_points_per_client = 1\n[model]\nkind = \"linear\"\n[algorithm]\n\
        name = \"ifca\"\nclusters = 2\nlr = 0.1\naggregation = \"gradient\"\n";
    let config = RunConfig::parse(text, &[], "test").unwrap();
    let own = |ids: &[usize]| crate::own_clients::own_clients(&config, ids).unwrap();
    let (two, ten) = (own(&[0, 1]), own(&(0..10).collect::<Vec<_>>()));
    let model = config.model.build(&two.input).unwrap();
    let (a, b) = (
        joined(&config, &two, model.as_ref()),
        joined(&config, &ten, model.as_ref()),
    );
    assert!(
        a.terms
            .iter()
            .any(|t| t.what.contains("2 clients, 4080 values")),
        "{a:?}"
    );
    let grown = b.total() - a.total();
    let per_client = (a.total() - BASE_BYTES) / 2;
    assert_eq!(grown, 8 * per_client, "{a:?} {b:?}");
    let e = check(&b, Some(1 << 20)).unwrap_err().to_string();
    assert!(e.contains("1.0 MiB available (--max-memory)"), "{e}");
}

#[test]
fn a_refusal_names_the_biggest_term_and_the_limit() {
    let estimate = Estimate {
        terms: vec![
            Term {
                what: "small".into(),
                bytes: 1,
            },
            Term {
                what: "per-client state".into(),
                bytes: 5 << 30,
            },
        ],
    };
    let limit = Limit {
        bytes: 2 << 30,
        source: "--max-memory",
    };
    let e = limit.check(&estimate).unwrap_err().to_string();
    assert!(
        e.starts_with(
            "run needs about 5.0 GiB (biggest: per-client state); 2.0 GiB available (--max-memory)"
        ),
        "{e}"
    );
    let roomy = Limit {
        bytes: 6 << 30,
        source: "--max-memory",
    };
    assert!(roomy.check(&estimate).is_ok());
}
