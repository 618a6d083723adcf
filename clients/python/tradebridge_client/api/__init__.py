from __future__ import absolute_import

# flake8: noqa

# import apis into api package
from tradebridge_client.api.alerts_api import AlertsApi
from tradebridge_client.api.controls_api import ControlsApi
from tradebridge_client.api.default_api import DefaultApi
