from django.urls import re_path

from nova_numa_policy.dashboard.numa import views

urlpatterns = [
    re_path(r'^$', views.IndexView.as_view(), name='index'),
    re_path(r'^hosts/(?P<host>.+)/$', views.HostDetailView.as_view(),
            name='detail'),
]
