"""The contract suite run for every head of every registered family (``testers.TESTERS``), and the check that no
registered family lacks a tester."""

import pytest

from contract.contract import ContractTests
from contract.testers import TESTERS
from hf_bahdanau.families import FAMILIES

pytestmark = pytest.mark.usefixtures("one_thread")


def test_every_registered_family_has_a_tester():
    assert FAMILIES and set(FAMILIES) - set(TESTERS) == set()


@pytest.fixture(params=[tester for testers in TESTERS.values() for tester in testers],
                ids=lambda tester: tester.name)
def tester(request):
    return request.param


class TestContract(ContractTests):
    """Every head's contract."""
