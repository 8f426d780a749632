"""The ``gpu`` marker is handled once, in ``conftest.py``: checked here on a small test file run by pytester."""

from __future__ import annotations

import pytest
from conftest import REPO, _gpu_visible

pytest_plugins = ["pytester"]


def test_the_gpu_marker_skips_exactly_where_no_gpu_is_visible(pytester: pytest.Pytester) -> None:
    pytester.makeconftest((REPO / "tests" / "conftest.py").read_text())
    pytester.makeini("[pytest]\nmarkers =\n    gpu: needs a CUDA GPU\n")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.gpu
        def test_marked():
            assert True

        def test_plain():
            assert True

        @pytest.mark.gpu
        class TestMarkedClass:
            def test_inside(self):
                assert True
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    if _gpu_visible():
        result.assert_outcomes(passed=3)
    else:
        result.assert_outcomes(passed=1, skipped=2)
        result.stdout.fnmatch_lines(["*needs a CUDA GPU (marked gpu)*"])
