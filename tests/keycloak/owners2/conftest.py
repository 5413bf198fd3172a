"""One `keycloak-owners2` lab for this package's modules (its start time printed); test_oidc.py's last test takes it
down and checks that nothing of it is left."""

from __future__ import annotations

import pytest
from kc_kit import design_lab


@pytest.fixture(scope="package")
def kc_lab(tmp_path_factory: pytest.TempPathFactory):
    with design_lab(tmp_path_factory) as config:
        yield config
