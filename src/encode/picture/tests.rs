//! The picture as a whole: well-formed XML with one titled element per fragment and the
//! classes of its standing; many fragments grouped into a bounded file.

use super::*;

fn fragment(i: u64, status: Status, extent: Option<Vec<(f64, f64)>>) -> Fragment {
    Fragment {
        name: format!("__{i}_{i}_{i:032x}_22"),
        t1: i,
        t2: i,
        status,
        consolidated: None,
        kind: Some("sparse"),
        cells: Some(10 * i),
        bytes: Some(1000 + i),
        domain_text: format!("y [{i}, {}], x [0, 9]", i + 3),
        extent,
        mbrs: vec![vec![(i as f64, i as f64 + 1.0), (0.0, 2.0)]],
        problem: None,
    }
}

fn picture(fragments: Vec<Fragment>, at: Option<u64>) -> Picture {
    Picture {
        at,
        axes: vec![
            Axis {
                name: "y".into(),
                kind: AxisKind::Integer,
                marks: vec![],
            },
            Axis {
                name: "x <&>".into(),
                kind: AxisKind::Integer,
                marks: vec![],
            },
        ],
        others: vec!["z".into()],
        fragments,
        conditions: vec![Condition {
            timestamp: 2,
            kind: "delete",
            text: "a < 3 AND s = 'x'".into(),
            commit: "__commits/__2_2_x_22.del".into(),
            applied: true,
        }],
        notes: vec![],
    }
}

/// Every element with a class, its classes and its `<title>` text, in document order.
fn titled(svg: &[u8]) -> Vec<(String, String)> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(svg);
    let mut out = Vec::new();
    let mut stack: Vec<Option<String>> = Vec::new();
    let mut title: Option<String> = None;
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf).expect("well-formed XML") {
            Event::Start(e) => {
                let class = e.try_get_attribute("class").unwrap().map(|a| {
                    a.normalized_value(quick_xml::XmlVersion::Explicit1_0)
                        .unwrap()
                        .into_owned()
                });
                if e.name().as_ref() == b"title" {
                    title = Some(String::new());
                }
                stack.push(class);
            }
            Event::End(e) => {
                stack.pop();
                if e.name().as_ref() == b"title" {
                    if let (Some(Some(class)), Some(t)) = (stack.last(), title.take()) {
                        out.push((class.clone(), t));
                    }
                }
            }
            Event::Text(t) => {
                if let Some(title) = &mut title {
                    title.push_str(&t.decode().unwrap());
                }
            }
            Event::GeneralRef(r) => {
                if let Some(title) = &mut title {
                    let c = match r.decode().unwrap().as_ref() {
                        "lt" => '<',
                        "gt" => '>',
                        "amp" => '&',
                        "quot" => '"',
                        "apos" => '\'',
                        _ => r.resolve_char_ref().unwrap().expect("a known reference"),
                    };
                    title.push(c);
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    out
}

#[test]
fn one_titled_element_per_fragment_with_its_standing() {
    let mut consolidated = fragment(1, Status::Live, Some(vec![(1.0, 5.0), (0.0, 10.0)]));
    consolidated.t2 = 3;
    consolidated.consolidated = Some("it replaced 2 fragments".into());
    let fragments = vec![
        consolidated,
        fragment(
            2,
            Status::Replaced {
                by: "__1_3_c_22".into(),
                from: 3,
            },
            Some(vec![(2.0, 6.0), (0.0, 10.0)]),
        ),
        fragment(4, Status::Partial, Some(vec![(4.0, 8.0), (0.0, 10.0)])),
        fragment(9, Status::Later, Some(vec![(9.0, 13.0), (0.0, 10.0)])),
        fragment(10, Status::Live, None),
    ];
    let svg = svg(&picture(fragments, Some(5)));
    let all = titled(&svg);
    let of = |class: &str| -> Vec<&String> {
        all.iter()
            .filter(|(c, _)| c.split(' ').any(|w| w == class))
            .map(|(_, t)| t)
            .collect()
    };
    let fragments = of("fragment");
    // The legend's swatches have no title.
    assert_eq!(fragments.len(), 5);
    assert_eq!(of("live").len(), 2);
    assert_eq!(of("hidden").len(), 2);
    assert_eq!(of("replaced").len(), 1);
    assert_eq!(of("later").len(), 1);
    assert_eq!(of("partial").len(), 1);
    assert_eq!(of("consolidated").len(), 1);
    assert!(of("unplaced")[0].starts_with("__10_10_"));
    assert!(fragments[0].starts_with("__1_1_"));
    assert!(fragments[0].contains("non-empty domain: y [1, 4], x [0, 9]"));
    assert!(fragments[0].contains("10 cells, 1,001 bytes on disk"));
    assert!(of("replaced")[0].contains("replaced by the consolidated fragment __1_3_c_22"));
    assert!(of("later")[0].contains("hidden at 5: written after it"));
    let deletes = of("delete");
    assert_eq!(deletes.len(), 1);
    assert!(deletes[0].contains("delete at 2") && deletes[0].contains("a < 3 AND s = 'x'"));
    let text = String::from_utf8(svg.clone()).unwrap();
    assert!(text.contains("x &lt;&amp;&gt;"), "axis names escaped");
    assert!(text.contains("dimensions past the second (z) are flattened"));
    assert!(text.contains("T = 5"));
    assert!(text.contains("class=\"mbr\""));
}

#[test]
fn the_same_description_gives_the_same_bytes() {
    let p = picture(
        vec![fragment(
            1,
            Status::Live,
            Some(vec![(1.0, 5.0), (0.0, 10.0)]),
        )],
        None,
    );
    assert_eq!(svg(&p), svg(&p.clone()));
}

/// 1-D: a row per fragment, oldest at the top, the dimension across.
#[test]
fn one_dimension_draws_a_row_per_fragment() {
    let mut p = picture(
        (1..=3)
            .map(|i| fragment(i, Status::Live, Some(vec![(i as f64, i as f64 + 4.0)])))
            .collect(),
        None,
    );
    p.axes.truncate(1);
    p.others.clear();
    for f in &mut p.fragments {
        f.mbrs = vec![vec![(f.t1 as f64, f.t1 as f64 + 1.0)]];
    }
    let svg = svg(&p);
    assert_eq!(
        titled(&svg)
            .iter()
            .filter(|(c, _)| c.starts_with("fragment live"))
            .count(),
        3
    );
    assert!(String::from_utf8(svg)
        .unwrap()
        .contains("fragments, oldest first"));
}

/// 100,000 fragments of one domain: one shape says how many it stands for, the
/// picture says it grouped them, and the file stays small.
#[test]
fn many_fragments_are_grouped_and_the_file_stays_small() {
    let n = 100_000u64;
    let fragments = (0..n)
        .map(|i| {
            let mut f = fragment(i, Status::Live, Some(vec![(0.0, 8.0), (0.0, 12.0)]));
            f.mbrs.clear();
            f
        })
        .collect();
    let svg = svg(&picture(fragments, None));
    let all = titled(&svg);
    let groups: Vec<_> = all.iter().filter(|(c, _)| c == "fragments live").collect();
    assert_eq!(groups.len(), 1, "{:?}", &all[..all.len().min(5)]);
    assert!(groups[0].1.starts_with("100,000 fragments drawn as one"));
    let text = String::from_utf8(svg.clone()).unwrap();
    assert!(text.contains("100,000 fragments are drawn as 1 shapes"));
    assert!(svg.len() < 64 << 10, "{} bytes", svg.len());

    // Scattered fragments: still at most MAX_SHAPES shapes, and a bounded file.
    let fragments = (0..n)
        .map(|i| {
            let y = (i % 1000) as f64;
            let x = (i / 1000) as f64;
            let mut f = fragment(i, Status::Live, Some(vec![(y, y + 1.0), (x, x + 1.0)]));
            f.mbrs.clear();
            f
        })
        .collect();
    let svg = super::svg(&picture(fragments, None));
    let shapes = titled(&svg)
        .iter()
        .filter(|(c, _)| c.starts_with("fragments "))
        .count();
    assert!(shapes <= MAX_SHAPES, "{shapes} shapes");
    assert!(svg.len() < 4 << 20, "{} bytes", svg.len());
}
