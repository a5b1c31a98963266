"""One registry idiom for everything looked up by name, and the conformance checks a new
app or study passes before it is used."""

from __future__ import annotations

import types

import pytest

from isthmus import studies
from isthmus.control import Controller
from isthmus.control.apps import APPS, check_app
from isthmus.predict.models import MODELS, make
from isthmus.registry import Registry


def test_a_miss_names_the_closest_name_and_every_known_one():
    registry = Registry("colour", {"red": 1, "green": 2, "blue": 3})
    assert registry.lookup("green") == 2
    with pytest.raises(ValueError, match=r"unknown colour 'gren'; did you mean 'green'\? "):
        registry.lookup("gren")
    with pytest.raises(ValueError, match=r"unknown colour 'purple'; known: red, green, blue$"):
        registry.lookup("purple")
    with pytest.raises(ValueError, match="a colour named 'red' is already registered"):
        registry.register("red", 4)
    assert list(registry) == ["red", "green", "blue"] and len(registry) == 3


def test_apps_forecasters_and_studies_answer_a_miss_alike():
    with pytest.raises(ValueError, match="unknown control app 'ecpm'; did you mean 'ecmp'"):
        APPS.lookup("ecpm")
    with pytest.raises(
        ValueError, match="unknown model 'holt_winter'; did you mean 'holt_winters'"
    ):
        make("holt_winter")
    assert isinstance(MODELS, Registry)
    with pytest.raises(ValueError, match="unknown study 'ofp'; did you mean 'ofpt'"):
        studies.study("ofp")


@pytest.mark.parametrize("name", list(APPS))
def test_every_registered_app_conforms(name):
    check_app(name)


def test_an_app_that_does_not_declare_its_parameters_is_refused():
    class Loose(Controller):
        def __init__(self, period):
            self.period = period

    APPS.register("loose-test-app", Loose)
    try:
        with pytest.raises(ValueError, match="decorate its __init__ with"):
            check_app("loose-test-app")
    finally:
        del APPS._entries["loose-test-app"]


@pytest.mark.parametrize("name", list(studies.available()))
def test_every_study_conforms(name):
    studies.check_study(studies.study(name))


def test_a_study_without_departures_is_refused():
    module = types.ModuleType("isthmus.studies.fake")
    ofpt = studies.study("ofpt")
    for attribute in studies.REQUIRED:
        setattr(module, attribute, getattr(ofpt, attribute))
    module.DEPARTURES = ()
    with pytest.raises(ValueError, match="DEPARTURES must be a non-empty tuple"):
        studies.check_study(module)
    del module.TITLE
    with pytest.raises(ValueError, match="lacks TITLE"):
        studies.check_study(module)
