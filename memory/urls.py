from django.urls import path

from memory import views

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/signup/", views.signup, name="signup"),
    path("chat/stats/", views.stats, name="chat_stats"),
    path("chat/sonas/", views.sona_create, name="sona_create"),
    path("chat/sonas/select/", views.sona_select, name="sona_select"),
    path("chat/turns/<uuid:page_id>/recall/", views.recall_panel, name="turn_recall"),
]
