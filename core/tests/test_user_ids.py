"""The user id rule shared by the HTTP API, the CLI and devices."""

import pytest

from omoide.user_ids import InvalidUserId, is_valid_user_id, validate_user_id


@pytest.mark.parametrize(
    "user", ["alice", "user42", "はなこ", "山田太郎", "a.b-c_d@home", "x" * 64])
def test_ordinary_ids_are_accepted(user: str) -> None:
    assert validate_user_id(user) == user


@pytest.mark.parametrize("user", [
    "", "x" * 65, "../../etc", "a/b", "a\\b", "nul\x00byte", "\x1b[31mred", "two words",
    ".hidden", "-rf", "tab\there", "line\nbreak", "\u202eevil"])
def test_ids_that_could_escape_a_path_a_log_line_or_a_terminal_are_refused(user: str) -> None:
    with pytest.raises(InvalidUserId, match="user id"):
        validate_user_id(user)


def test_a_full_width_spelling_is_refused_with_its_normal_form() -> None:
    with pytest.raises(InvalidUserId, match="'alice'"):
        validate_user_id("ａｌｉｃｅ")


def test_non_strings_are_refused() -> None:
    with pytest.raises(InvalidUserId, match="string"):
        validate_user_id(5)
    assert not is_valid_user_id(None)
    assert is_valid_user_id("bob")
