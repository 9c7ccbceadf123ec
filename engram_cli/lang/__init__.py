"""Language: keyword analysis (English and Chinese), time expressions in queries, secret detection.

Pure functions over text, with no store and no model: every other part of engram may use them.
"""
