"""The live desk (DESIGN §14): its API lives in desk.live.api."""
