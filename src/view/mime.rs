//! The media type of a file the trees show, by its name: for the files that no face
//! declares one for (the array-level JSON, `zarr/`'s metadata and chunks, a Filo
//! column's files). A face's file has the type its face declares.

/// The media type of a file named `name`.
pub fn of_name(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    match (name, ext) {
        ("zarr.json", _) | (_, "json" | "zarray" | "zattrs" | "zgroup" | "zmetadata") => {
            "application/json"
        }
        (_, "csv") => "text/csv; charset=utf-8",
        (_, "txt" | "hdr") => "text/plain; charset=utf-8",
        (_, "html") => "text/html; charset=utf-8",
        (_, "tif" | "tiff") => "image/tiff",
        (_, "svg") => "image/svg+xml",
        (_, "png") => "image/png",
        (_, "nc") => "application/x-netcdf",
        (_, "h5") => "application/x-hdf5",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::of_name;

    #[test]
    fn types_by_name() {
        assert_eq!(of_name("zarr.json"), "application/json");
        assert_eq!(of_name(".zarray"), "application/json");
        assert_eq!(of_name("cells.csv"), "text/csv; charset=utf-8");
        assert_eq!(of_name("values.bin"), "application/octet-stream");
        assert_eq!(of_name("0.0"), "application/octet-stream");
        assert_eq!(of_name("fragments.svg"), "image/svg+xml");
    }
}
