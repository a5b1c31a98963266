from isthmus._core import *  # noqa
