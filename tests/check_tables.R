# R's arrow reading fragfs's tables (tests/tables_r.rs): every column of each file named
# on the command line, and one column read alone, as one JSON document of canonical
# values that the test compares with pyarrow's read of the same file.
suppressMessages(library(arrow))
# R strings cannot hold NUL, which TileDB writes as a string's fill value: stripped.
options(arrow.skip_nul = TRUE)
canonical <- function(v) {
  if (is.factor(v)) return(lapply(as.character(v), function(x) if (is.na(x)) NULL else x))
  if (inherits(v, "integer64")) return(lapply(as.character(v), function(x) if (is.na(x)) NULL else x))
  if (inherits(v, "POSIXct")) return(lapply(as.numeric(v), function(x) if (is.na(x)) NULL else sprintf("%.17g", x)))
  if (is.list(v)) return(lapply(v, function(x) {
    if (is.null(x)) NULL
    else if (is.raw(x)) paste(sprintf("%02x", as.integer(x)), collapse = "")
    else canonical(x)
  }))
  if (is.logical(v) || is.character(v)) return(lapply(v, function(x) if (is.na(x)) NULL else x))
  if (is.integer(v)) return(lapply(v, function(x) if (is.na(x)) NULL else as.character(x)))
  # NaN is a value (is.na holds for it too); NA is a null.
  if (is.numeric(v)) return(lapply(v, function(x) {
    if (is.nan(x)) "NaN" else if (is.na(x)) NULL else sprintf("%.17g", x)
  }))
  stop(paste("no canonical form for", paste(class(v), collapse = " ")))
}
describe <- function(df) {
  cols <- lapply(names(df), function(n) {
    v <- df[[n]]
    list(class = class(v), ordered = is.ordered(v),
         levels = if (is.factor(v)) I(levels(v)) else NULL, values = canonical(v))
  })
  names(cols) <- names(df)
  list(rows = nrow(df), columns = cols)
}
files <- commandArgs(TRUE)
out <- lapply(files, function(f) {
  df <- if (endsWith(f, ".arrow")) read_ipc_file(f) else read_parquet(f)
  first <- names(df)[length(names(df))]
  one <- if (endsWith(f, ".arrow")) read_ipc_file(f, col_select = all_of(first)) else read_parquet(f, col_select = all_of(first))
  list(file = f, table = describe(df), projected = list(name = first, names = I(names(one)), table = describe(one)))
})
cat(jsonlite::toJSON(out, auto_unbox = TRUE, null = "null", na = "null", digits = NA))
