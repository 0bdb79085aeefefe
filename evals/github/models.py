"""What the GitHub API returns, as far as evalgate reads it (only the fields it uses; the rest
is ignored), and who a token's comments are by."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from evals.common.errors import UsageError

# GITHUB_TOKEN is an app installation token: /user answers 403 and its comments carry this login.
ACTIONS_BOT_LOGIN = "github-actions[bot]"


# ---------------------------------------------------------------------------------------------
# What the API returns (only the fields we use; the rest is ignored)


class _ApiModel(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Asset(_ApiModel):
    id: int
    name: str
    size: int = 0
    state: str = "uploaded"  # "starter" = an upload that never finished; it blocks the name until deleted
    content_type: str | None = None
    url: str | None = None
    browser_download_url: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


class Release(_ApiModel):
    id: int
    tag_name: str
    name: str | None = None
    upload_url: str
    html_url: str | None = None
    draft: bool = False
    prerelease: bool = False
    immutable: bool = False
    created_at: str | None = None
    assets: list[Asset] = Field(default_factory=list)


class Permissions(_ApiModel):
    admin: bool = False
    maintain: bool = False
    push: bool = False
    triage: bool = False
    pull: bool = False


class Repository(_ApiModel):
    full_name: str
    private: bool = False
    default_branch: str | None = None
    permissions: Permissions | None = None  # what this token may do, when the API says


class User(_ApiModel):
    login: str
    type: str | None = None


class App(_ApiModel):
    slug: str


class Comment(_ApiModel):
    id: int
    body: str | None = None
    html_url: str | None = None
    user: User | None = None
    performed_via_github_app: App | None = None
    created_at: str | None = None
    updated_at: str | None = None

    @property
    def login(self) -> str | None:
        return self.user.login if self.user else None


class LoginMismatch(UsageError):
    """EVALGATE_GITHUB_LOGIN names an identity this token cannot comment as."""


class Identity(BaseModel):
    """Who this token's comments are by. ``app``: an installation token (``GET /user`` answers
    403), whose comments are a bot's (``user.type`` "Bot", ``<slug>[bot]``), made via that app;
    otherwise the login ``GET /user`` returned (a personal token), the only human whose comments
    evalgate may edit."""

    login: str
    app: bool

    def wrote(self, comment: Comment) -> bool:
        """Whether ``comment`` is by this identity: same login, and for an app a bot's comment
        that GitHub says (``performed_via_github_app``, when it says) was made via that app."""
        user = comment.user
        if user is None or user.login != self.login:
            return False
        if not self.app:
            return True
        via = comment.performed_via_github_app
        return user.type == "Bot" and (via is None or f"{via.slug}[bot]" == self.login)


class WriteAccess(BaseModel):
    """What evalgate could establish about a token's write access to the repository's contents
    (docs/spec.md#trust-boundaries): ``can_write`` True (it can), False (proven it cannot: GitHub
    refused a write with 403), None (not established). ``asked`` is the request that decided,
    ``answer`` what GitHub answered, both quoted in the refusal."""

    model_config = ConfigDict(frozen=True)

    can_write: bool | None
    asked: str
    answer: str
