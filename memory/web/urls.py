from django.urls import path

from memory.web import editing, inspector, tokens, views

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/signup/", views.signup, name="signup"),
    path("chat/stats/", views.stats, name="chat_stats"),
    path("chat/sonas/", views.sona_create, name="sona_create"),
    path("chat/sonas/select/", views.sona_select, name="sona_select"),
    path("chat/sonas/rename/", views.sona_rename_view, name="sona_rename"),
    path("chat/turns/<uuid:page_id>/recall/", views.recall_panel, name="turn_recall"),
    path("settings/tokens/", tokens.tokens, name="api_tokens"),
    path("settings/decay/", views.decay_settings, name="decay_settings"),
    path("inspector/", inspector.inspector_home, name="inspector_home"),
    path("inspector/switch/", inspector.inspector_switch, name="inspector_switch"),
    path("inspector/<str:username>/", inspector.overview, name="inspector_overview"),
    path("inspector/<str:username>/stm/", inspector.stm, name="inspector_stm"),
    path("inspector/<str:username>/mtm/", inspector.mtm, name="inspector_mtm"),
    path("inspector/<str:username>/mtm/<uuid:segment_id>/", inspector.segment, name="inspector_segment"),
    path("inspector/<str:username>/lpm/", inspector.lpm, name="inspector_lpm"),
    path("inspector/<str:username>/lpm/traits/<slug:key>/", inspector.trait, name="inspector_trait"),
    path("inspector/<str:username>/provenance/<slug:kind>/<str:ident>/", inspector.provenance,
         name="inspector_provenance"),
    path("inspector/<str:username>/recalls/", inspector.recalls, name="inspector_recalls"),
    path("inspector/<str:username>/recalls/<uuid:trace_id>/", inspector.trace, name="inspector_trace"),
    path("inspector/<str:username>/events/", inspector.events, name="inspector_events"),
    path("inspector/<str:username>/replay/", inspector.replay, name="inspector_replay"),
    path("inspector/<str:username>/memory/<slug:kind>/<str:ident>/", editing.bar, name="memory_actions"),
    path("inspector/<str:username>/memory/<slug:kind>/<str:ident>/pin/", editing.pin, name="memory_pin"),
    path("inspector/<str:username>/memory/<slug:kind>/<str:ident>/repress/", editing.repress, name="memory_repress"),
    path("inspector/<str:username>/memory/<slug:kind>/<str:ident>/correct/", editing.correct, name="memory_correct"),
    path("inspector/<str:username>/memory/<slug:kind>/<str:ident>/delete/", editing.delete, name="memory_delete"),
]
