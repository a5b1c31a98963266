"""Parameters as the engine declares them, once: each field of its configuration types
(`EngineConfig`, `QueueConfig`, `AqmConfig`, `SchedulerConfig`, `TcpConfig`, BCN's and
DCQCN's) carries its meaning, unit, default and valid range in Rust
(`isthmus_core::declared`). From that declaration this module builds

- the Python models users write (`model`): fields typed by unit ("5ms", "64KB",
  "10Gbps", "250pkts"), their descriptions, defaults and ranges;
- the value that crosses back into the engine (`DeclaredModel.engine`), converted by
  each field's unit, with no per-field code;
and `isthmus.parameter_docs` the listing of `isthmus parameters` and docs/parameters.md.

Nothing here restates a parameter: a change in Rust shows up in all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, Field, create_model, model_validator

from isthmus import _core, units
from isthmus.arguments import checked
from isthmus.fields import QueueLimit, Rate, Size, Strict, Time
from isthmus.wire import deserialised

DECLARED: dict[str, dict] = deserialised(_core.declarations())["$defs"]

# Largest value of each unsigned integer format the engine stores.
_FORMAT_MAX = {"uint8": 2**8 - 1, "uint16": 2**16 - 1, "uint32": 2**32 - 1, "uint64": 2**64 - 1}


@dataclass(frozen=True)
class Unit:
    """How a user writes a quantity of one of the declared units, and how it reaches
    the engine."""

    python_type: object
    to_engine: Callable[[Any], Any]
    to_user: Callable[[Any], str]
    shown: str
    # An integer in the engine's unit written the way a user would, exactly ("7ps").
    suffix: str | None


def _limit_text(limit: tuple[str, int]) -> str:
    unit, count = limit
    return f"{count}{'pkts' if unit == 'packets' else 'B'}"


UNITS: dict[str, Unit] = {
    "ps": Unit(Time, units.time_ps, units.format_time, "time", "ps"),
    "bytes": Unit(Size, units.size_bytes, lambda n: f"{n}B", "bytes", "B"),
    "bit/s": Unit(Rate, units.rate_bps, lambda n: f"{n}bps", "bit/s", "bps"),
    "limit": Unit(QueueLimit, units.limit, _limit_text, "packets or bytes", None),
}


@dataclass(frozen=True)
class Parameter:
    """One declared field: what it means, its unit, default and range (in the engine's
    units), and whether it may be left out."""

    type_name: str
    name: str
    meaning: str
    schema: dict = field(repr=False)
    unit: str | None
    required: bool
    nullable: bool
    # A field of one flattened sub-kind only (PIFO's budgets: rank "deadline"): the tag
    # and the value it goes with.
    only_with: tuple[str, str] | None = None
    # The declared type the field holds, if it holds one (a QueueConfig, a Pfc).
    holds: str | None = None

    @property
    def has_default(self) -> bool:
        return "default" in self.schema

    @property
    def default(self) -> object:
        return self.schema.get("default")

    def bounds(self) -> dict[str, float]:
        """The declared range as pydantic's keywords (ge, gt, le, lt)."""
        keys = {
            "minimum": "ge",
            "exclusiveMinimum": "gt",
            "maximum": "le",
            "exclusiveMaximum": "lt",
        }
        out = {keys[k]: v for k, v in self.schema.items() if k in keys}
        top = _FORMAT_MAX.get(self.schema.get("format", ""))
        if top is not None and "le" not in out:
            out["le"] = top
        if "gt" in out and out.get("ge") is not None and out["ge"] <= out["gt"]:
            del out["ge"]
        return out

    def range_text(self) -> str:
        """The valid range in words ("(0, 1]", ">= 1"; a list's length and items' range
        for a list), "" where any value goes."""
        if self.schema.get("type") == "array" and "items" in self.schema:
            low, high = self.schema.get("minItems"), self.schema.get("maxItems")
            length = f"{low}-{high} entries" if low is not None and high is not None else ""
            each = self.schema.get("item_minimum")
            return ", ".join(t for t in (length, f"each >= {each}" if each else "") if t)
        # A bound that only restates the storage type (unsigned, 32 bits) says nothing.
        b = {
            k: v
            for k, v in self.bounds().items()
            if not (k == "ge" and v == 0) and not (k == "le" and v in _FORMAT_MAX.values())
        }
        low = f"({b['gt']}" if "gt" in b else f"[{b['ge']}" if "ge" in b else None
        high = f"{b['le']}]" if "le" in b else f"{b['lt']})" if "lt" in b else None
        if low and high:
            return f"{low}, {high}"
        if low:
            return f"> {b['gt']}" if "gt" in b else f">= {b['ge']}"
        if high:
            return f"<= {b['le']}" if "le" in b else f"< {b['lt']}"
        return ""

    def user_default(self) -> object:
        """The default as a user writes it ("5.000ms", "1460B"); None when required."""
        value = self.default
        if value is None or self.unit not in UNITS:
            return value
        to_user = UNITS[self.unit].to_user
        return [to_user(v) for v in value] if isinstance(value, list) else to_user(value)


def default(type_name: str, name: str, kind: str | None = None) -> Any:
    """A parameter's declared default as a user writes it ("200.000ms", "1500B")."""
    parameter = parameters(type_name, kind)[name]
    if not parameter.has_default:
        raise KeyError(f"{type_name}.{name} declares no default")
    return parameter.user_default()


def _resolve(schema: dict) -> dict:
    """A field's schema with a `$ref` to a declared type replaced by that type's."""
    ref = schema.get("$ref")
    if ref is None:
        return schema
    return {**DECLARED[ref.rsplit("/", 1)[1]], **{k: v for k, v in schema.items() if k != "$ref"}}


def _variant(type_name: str, kind: str | None) -> dict:
    declared = DECLARED[type_name]
    if kind is None:
        return declared
    for variant in declared.get("oneOf", []):
        if variant.get("properties", {}).get("kind", {}).get("const") == kind:
            return variant
    raise KeyError(f"{type_name} declares no kind {kind!r}")


def one_line(text: str) -> str:
    return " ".join(text.split())


def meaning_of(type_name: str, kind: str | None = None) -> str:
    """What a declared type (or one kind of it) is, in the engine's words."""
    return one_line(_variant(type_name, kind).get("description", ""))


def parameters(type_name: str, kind: str | None = None) -> dict[str, Parameter]:
    """The declared fields of a type, or of one kind of a type tagged by kind."""
    declared = _variant(type_name, kind)
    required = set(declared.get("required", ()))
    out = {}
    for name, raw in declared.get("properties", {}).items():
        if name == "kind":
            continue
        schema = dict(raw)
        nullable = False
        holds = schema.get("$ref")
        if "anyOf" in schema:  # Option<T> of a declared type: [T, null]
            options = [o for o in schema.pop("anyOf") if o.get("type") != "null"]
            nullable = True
            holds = options[0].get("$ref")
            schema = {**_resolve(options[0]), **schema}
        schema = _resolve(schema)
        if isinstance(schema.get("type"), list):  # Option<number>: ["integer", "null"]
            nullable = "null" in schema["type"]
            schema["type"] = next(t for t in schema["type"] if t != "null")
        out[name] = Parameter(
            type_name=type_name,
            name=name,
            meaning=one_line(schema.get("description", "")),
            schema=schema,
            unit=schema.get("unit"),
            required=name in required,
            nullable=nullable,
            holds=holds.rsplit("/", 1)[1] if holds and schema.get("unit") is None else None,
        )
    if kind is not None and "oneOf" in declared:
        out |= _flattened(type_name, declared)
    return out


def _flattened(type_name: str, declared: dict) -> dict[str, Parameter]:
    """A kind's flattened tagged sub-kinds (PIFO's rank): the tag as one parameter
    whose values are the sub-kinds, and each sub-kind's fields as parameters that go
    with that value only."""
    subkinds = declared["oneOf"]
    tag = next(iter(subkinds[0]["properties"]))
    values = [v["properties"][tag]["const"] for v in subkinds]
    meaning = " ".join(
        f"`{v['properties'][tag]['const']}`: {one_line(v.get('description', ''))}" for v in subkinds
    )
    out = {
        tag: Parameter(type_name, tag, meaning, {"enum": values}, None, True, False),
    }
    for subkind, value in zip(subkinds, values, strict=True):
        for name, schema in subkind["properties"].items():
            if name == tag:
                continue
            # Present with its value of the tag only: "non-empty with it" is checked by
            # `DeclaredModel`, so the field itself takes its empty default too.
            relaxed = {k: v for k, v in schema.items() if k != "minItems"}
            out[name] = Parameter(
                type_name,
                name,
                one_line(schema.get("description", "")),
                {**relaxed, "default": [] if schema.get("type") == "array" else None},
                schema.get("unit"),
                required=False,
                nullable=schema.get("type") != "array",
                only_with=(tag, value),
            )
    return out


def _in_range(parameter: Parameter) -> AfterValidator:
    """Checks a quantity written with a unit against the declared range, once in the
    engine's unit."""
    unit = UNITS[parameter.unit]
    bounds = parameter.bounds()
    checks = {
        "gt": (lambda v, b: v > b, "greater than"),
        "ge": (lambda v, b: v >= b, "at least"),
        "le": (lambda v, b: v <= b, "at most"),
        "lt": (lambda v, b: v < b, "less than"),
    }

    def shown(bound: float) -> str:
        # Exactly, in the engine's unit: a rounded "18446744.074s" would misstate it.
        exact = int(bound) if float(bound).is_integer() else bound
        return f"{exact}{unit.suffix}" if unit.suffix else unit.to_user(bound)

    def check(value: str) -> str:
        engine_value = unit.to_engine(value)
        for key, bound in bounds.items():
            holds, words = checks[key]
            if not holds(engine_value, bound):
                raise ValueError(f"must be {words} {shown(bound)}")
        return value

    return AfterValidator(check)


def _python_type(parameter: Parameter) -> object:
    """The type a user writes the parameter as, with its declared range."""
    schema = parameter.schema
    kind = schema.get("type")
    if parameter.unit in UNITS and (kind != "array" or parameter.unit == "limit"):
        base: object = Annotated[UNITS[parameter.unit].python_type, _in_range(parameter)]
    elif kind == "boolean":
        base = bool
    elif kind == "integer":
        base = Annotated[int, Field(**parameter.bounds())]
    elif kind == "number":
        base = Annotated[float, Field(allow_inf_nan=False, **parameter.bounds())]
    elif kind == "array":
        item = Parameter(
            parameter.type_name,
            parameter.name,
            "",
            {**schema["items"], "unit": parameter.unit}
            | ({"minimum": schema["item_minimum"]} if "item_minimum" in schema else {}),
            parameter.unit,
            True,
            False,
        )
        lengths = {
            "min_length": schema.get("minItems"),
            "max_length": schema.get("maxItems"),
        }
        base = Annotated[list[_python_type(item)], Field(**lengths)]
    elif "enum" in schema:
        base = Literal[tuple(schema["enum"])]
    elif "oneOf" in schema and all("const" in option for option in schema["oneOf"]):
        base = Literal[tuple(option["const"] for option in schema["oneOf"])]
    else:
        raise TypeError(f"{parameter.type_name}.{parameter.name}: no Python form declared")
    return base | None if parameter.nullable else base


def typed(type_name: str, name: str, kind: str | None = None) -> object:
    """The type a user writes a declared parameter as, with its declared range, for a
    model whose field differs from the engine's in default or presence only."""
    return _python_type(parameters(type_name, kind)[name])


def _engine_value(parameter: Parameter, value: object) -> object:
    if value is None:
        return None
    if parameter.unit in UNITS:
        convert = UNITS[parameter.unit].to_engine
        return [convert(v) for v in value] if isinstance(value, list) else convert(value)
    return list(value) if isinstance(value, list) else value


class DeclaredModel(Strict):
    """A model whose fields are an engine type's declared parameters."""

    # Each field's declaration: (field, the engine field it nests under or None,
    # parameter); and the kind the engine's value is tagged with, if any.
    declared_fields: ClassVar[tuple] = ()
    declared_kind: ClassVar[str | None] = None

    @model_validator(mode="after")
    def _sub_kind_fields(self) -> DeclaredModel:
        for field_name, _, parameter in self.declared_fields:
            if parameter.only_with is None:
                continue
            tag, value = parameter.only_with
            given = getattr(self, field_name) not in (None, [])
            if given != (getattr(self, tag) == value):
                raise ValueError(
                    f"{field_name} goes with {tag} {value!r}, and only with it"
                    + (f": {parameter.meaning}" if parameter.meaning else "")
                )
        return self

    def engine(self) -> dict:
        """The engine's form: every declared field in its unit (nested types nested)."""
        out: dict = {} if self.declared_kind is None else {"kind": self.declared_kind}
        for field_name, nest, parameter in self.declared_fields:
            if (
                parameter.only_with
                and getattr(self, parameter.only_with[0]) != (parameter.only_with[1])
            ):
                continue
            value = _engine_value(parameter, getattr(self, field_name))
            if nest is None:
                out[parameter.name] = value
            else:
                out.setdefault(nest, {})[parameter.name] = value
        return out


def model(
    type_name: str,
    kind: str | None = None,
    *,
    name: str,
    module: str,
    base: type[BaseModel] = DeclaredModel,
    doc: str | None = None,
    only: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    nested: dict[str, str] | None = None,
) -> type[DeclaredModel]:
    """A model of the declared type `type_name` (its kind `kind`, for a type tagged by
    kind), named `name` in `module` (so it pickles), on `base`. `only`/`exclude` pick
    fields; `nested` maps a field holding another declared type to that type, whose
    fields become `field_subfield` (TCP's `dctcp_g`)."""
    wanted = set(only) if only is not None else None
    fields: dict[str, Any] = {}
    declared: list[tuple[str, str | None, Parameter]] = []
    if kind is not None:
        fields["kind"] = (Literal[kind], kind)
    for parameter in parameters(type_name, kind).values():
        if parameter.name in exclude or (wanted is not None and parameter.name not in wanted):
            continue
        if nested and parameter.name in nested:
            for inner in parameters(nested[parameter.name]).values():
                field_name = f"{parameter.name}_{inner.name}"
                fields[field_name] = _field(inner)
                declared.append((field_name, parameter.name, inner))
            continue
        fields[parameter.name] = _field(parameter)
        declared.append((parameter.name, None, parameter))
    built = create_model(
        name,
        __base__=base,
        __module__=module,
        __doc__=doc or meaning_of(type_name, kind),
        **fields,
    )
    built.declared_fields = tuple(declared)
    built.declared_kind = kind
    return built


def _field(parameter: Parameter) -> tuple[object, Any]:
    kwargs: dict[str, Any] = {"description": parameter.meaning}
    if parameter.has_default and not parameter.required:
        kwargs["default"] = parameter.user_default()
    return (_python_type(parameter), Field(**kwargs))


def from_arguments(built: type[DeclaredModel], name: str, **values: object) -> DeclaredModel:
    """`built` from a Python call's arguments, checked (one ValueError naming `name` and
    each bad field): there a quantity may also be an integer in the engine's unit, as
    everywhere in the Python API."""
    unit_of = {field_name: p.unit for field_name, _, p in built.declared_fields}
    for key, value in values.items():
        unit = UNITS.get(unit_of.get(key) or "")
        if (
            unit is not None
            and unit.suffix
            and isinstance(value, int)
            and not isinstance(value, bool)
        ):
            values[key] = f"{value}{unit.suffix}"
    return checked(built, name, **values)
