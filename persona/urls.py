from django.urls import path

from persona import views

urlpatterns = [
    path("profile/", views.profile, name="profile"),
    path("profile/skip/", views.profile_skip, name="profile_skip"),
]
