"""A result's tables as named numpy columns, written to Parquet without pandas.

A run's tables (time series, HTTP requests, groups of streams) are built from the core's
numpy columns and written through pyarrow alone: importing pandas costs about half a second,
more than a short run takes, and ``fatpipe run`` needs no DataFrame. pandas is imported
only when a :class:`~fatpipe.result.Result`'s DataFrame is asked for (:meth:`Columns.frame`).

The Parquet files are the ones pandas wrote before (``pa.Table.from_pandas`` of the same
DataFrame, without the pandas metadata; ``tests/test_columns.py`` compares them byte for
byte): NaN in a float column is a null, a name column (flow, link) is a dictionary of
``large_string`` names with the smallest signed index type pandas' categoricals use, text
is ``large_string``. So a file no longer depends on the pandas version, only on its data
and pyarrow's version.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

__all__ = ["Columns", "write_frame_parquet"]

#: pandas' rule for a categorical's code type (``coerce_indexer_dtype``): the smallest signed
#: integer whose maximum exceeds the number of categories.
_CODE_TYPES = (np.int8, np.int16, np.int32, np.int64)


def code_dtype(categories: int) -> Any:
    """The integer type pandas gives the codes of a categorical with this many categories."""
    for dtype in _CODE_TYPES:
        if categories < np.iinfo(dtype).max:
            return dtype
    return np.int64


class Columns:
    """An ordered table of equal-length numpy columns. A column named in ``categories`` holds
    integer codes into that list of names (a flow or link index from the core): a column of
    50 million flow names costs its codes, not 50 million strings."""

    def __init__(self, data: Mapping[str, Any], categories: Optional[Mapping[str, Sequence[str]]] = None) -> None:
        self.data: Dict[str, np.ndarray] = {name: np.asarray(values) for name, values in data.items()}
        self.categories: Dict[str, List[str]] = {k: list(v) for k, v in (categories or {}).items()}
        lengths = {len(v) for v in self.data.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns of different lengths: {sorted(lengths)}")

    def __len__(self) -> int:
        return len(next(iter(self.data.values()))) if self.data else 0

    def __contains__(self, name: object) -> bool:
        return name in self.data

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.data[name]

    # ---- building ---------------------------------------------------------------------

    @classmethod
    def from_records(cls, records: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> "Columns":
        """A table of JSON-like rows (the summary's groups), each column typed as pandas
        infers it from Python values: bools, integers, numbers with gaps as float64 (None is
        NaN), anything else (text, all-None) kept as objects for pyarrow to type."""
        return cls({name: _infer([r.get(name) for r in records]) for name in columns})

    @classmethod
    def read_parquet(cls, path: Union[str, "os.PathLike[str]"]) -> "Columns":
        """A table written by :meth:`write_parquet` (or by pandas): dictionary columns come
        back as codes and names, nulls in float columns as NaN."""
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        data: Dict[str, Any] = {}
        categories: Dict[str, List[str]] = {}
        for name, column in zip(table.column_names, table.columns):
            chunk = column.combine_chunks()
            if hasattr(chunk, "dictionary"):
                categories[name] = [str(v) for v in chunk.dictionary.to_pylist()]
                data[name] = chunk.indices.to_numpy(zero_copy_only=False)
            else:
                data[name] = chunk.to_numpy(zero_copy_only=False)
        return cls(data, categories)

    # ---- reading ----------------------------------------------------------------------

    def frame(self) -> "pd.DataFrame":
        """The table as a pandas DataFrame (a name column as a categorical); the numeric
        columns are shared, not copied."""
        import pandas as pd

        columns: Dict[str, Any] = {}
        for name, values in self.data.items():
            if name in self.categories:
                columns[name] = pd.Categorical.from_codes(values, categories=self.categories[name])
            else:
                columns[name] = values
        return pd.DataFrame(columns, copy=False)

    def arrow(self) -> "pa.Table":
        """The table as pyarrow would convert :meth:`frame` (``pa.Table.from_pandas``).

        Built from the columns' buffers (``pa.Array.from_buffers``): ``pa.array()`` asks
        pandas whether its argument is a pandas object, which imports pandas."""
        import pyarrow as pa

        arrays = []
        for name, values in self.data.items():
            if name in self.categories:
                names = self.categories[name]
                codes = values.astype(code_dtype(len(names)), copy=False)
                arrays.append(pa.DictionaryArray.from_arrays(_arrow_array(codes, codes < 0), _text_array(names)))
            elif values.dtype == object:
                arrays.append(_object_array(values))
            else:
                # NaN in a float column is a null, as pandas wrote it.
                arrays.append(_arrow_array(values, np.isnan(values) if values.dtype.kind == "f" else None))
        return pa.Table.from_arrays(arrays, names=list(self.data))

    def write_parquet(self, path: Union[str, "os.PathLike[str]"]) -> None:
        _write_table(self.arrow(), path)


def write_frame_parquet(path: Union[str, "os.PathLike[str]"], df: "pd.DataFrame") -> None:
    """A pandas DataFrame (a sweep's summary) as Parquet, without its index or the pandas
    metadata (which records the pandas version)."""
    import pyarrow as pa

    _write_table(pa.Table.from_pandas(df, preserve_index=False).replace_schema_metadata(None), path)


def _write_table(table: "pa.Table", path: Union[str, "os.PathLike[str]"]) -> None:
    import pyarrow.parquet as pq

    pq.write_table(table, path, compression="snappy")


def _infer(values: List[Any]) -> np.ndarray:
    present = [v for v in values if v is not None]
    if present and len(present) == len(values) and all(isinstance(v, bool) for v in values):
        return np.array(values, dtype=bool)
    numbers = present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present)
    if numbers and len(present) == len(values) and all(isinstance(v, int) for v in values):
        return np.array(values, dtype=np.int64)
    if numbers:
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _validity(missing: Optional[np.ndarray]) -> Any:
    """Arrow's validity bitmap (bit set = present) of a boolean mask of missing values;
    None when nothing is missing."""
    import pyarrow as pa

    if missing is None or not missing.any():
        return None
    return pa.py_buffer(np.packbits(~missing, bitorder="little"))


def _arrow_array(values: np.ndarray, missing: Optional[np.ndarray] = None) -> Any:
    """A numeric or boolean numpy column as an Arrow array, sharing its buffer (booleans are
    packed to bits), with ``missing`` as nulls."""
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    if values.dtype == bool:
        kind, data = pa.bool_(), np.packbits(values, bitorder="little")
    else:
        kind, data = pa.from_numpy_dtype(values.dtype), values
    nulls = int(missing.sum()) if missing is not None else 0
    return pa.Array.from_buffers(kind, len(values), [_validity(missing), pa.py_buffer(data)], null_count=nulls)


def _text_array(texts: Sequence[Optional[str]]) -> Any:
    """Strings (None a null) as Arrow ``large_string``, pandas' str column type."""
    import pyarrow as pa

    encoded = [b"" if t is None else t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    missing = np.array([t is None for t in texts], dtype=bool)
    return pa.Array.from_buffers(pa.large_string(), len(encoded),
                                 [_validity(missing), pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))],
                                 null_count=int(missing.sum()))


def _object_array(values: np.ndarray) -> Any:
    """Text (pandas' str columns, large_string) or all None (a null column)."""
    import pyarrow as pa

    if all(v is None for v in values):
        return pa.nulls(len(values))
    if all(v is None or isinstance(v, str) for v in values):
        return _text_array(list(values))
    return pa.array(values, from_pandas=True)  # mixed types: pyarrow decides (imports pandas)
